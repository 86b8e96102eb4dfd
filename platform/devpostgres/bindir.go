package devpostgres

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// debianBinGlob matches the server binaries of Debian's postgresql packages,
// which are not on PATH.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// ErrNoBinaries means no PostgreSQL server binaries were found;
// scripts/ensure-postgres.sh installs them.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found (run scripts/ensure-postgres.sh)")

// findBinDir returns the directory holding initdb and postgres.
func findBinDir(configured string) (string, error) {
	if configured != "" {
		if !hasServerBinaries(configured) {
			return "", fmt.Errorf("find binaries: %s has no initdb and postgres", configured)
		}
		return configured, nil
	}
	if dir := newestDebianBinDir(); dir != "" {
		return dir, nil
	}
	path, err := exec.LookPath("postgres")
	if err != nil {
		return "", fmt.Errorf("find binaries: %w", ErrNoBinaries)
	}
	dir := filepath.Dir(path)
	if !hasServerBinaries(dir) {
		return "", fmt.Errorf("find binaries: %s has postgres but no initdb", dir)
	}
	return dir, nil
}

// newestDebianBinDir picks the highest major version among the installed
// Debian packages, or "" when there is none.
func newestDebianBinDir() string {
	dirs, _ := filepath.Glob(debianBinGlob) // the pattern is constant and valid
	best, bestVersion := "", -1
	for _, dir := range dirs {
		version, err := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		if err != nil || version <= bestVersion || !hasServerBinaries(dir) {
			continue
		}
		best, bestVersion = dir, version
	}
	return best
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
