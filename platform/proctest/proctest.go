// Package proctest runs a service's own binary in a test, so that a test
// can kill it the way an operating system does (SIGKILL: no shutdown of
// any kind) and start it again.
package proctest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Build builds the main package pkg (a path as `go build` takes it, from
// the test's directory) and returns the binary's path. Build tags, if
// any, select files that only tests build, such as the matcher's killtest
// stop point. Each package is built once per test binary and set of tags,
// since linking a service takes seconds of CPU, into a directory its tests
// share (RemoveBuilds removes it). Tests only run the binary, so one copy
// serves all of them, at once too.
func Build(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	abs, err := filepath.Abs(pkg)
	if err != nil {
		t.Fatalf("go build %s: %v", pkg, err)
	}
	b := builds.of(abs + " " + strings.Join(tags, ","))
	b.once.Do(func() { b.path, b.err = goBuild(pkg, abs, tags) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// builds are the binaries this test binary has built, by package
// directory, in dir. It is the package's only mutable state.
var builds = buildSet{m: map[string]*build{}}

type buildSet struct {
	mu  sync.Mutex
	dir string
	m   map[string]*build
}

// build is one package's binary, built on first use.
type build struct {
	once sync.Once
	path string
	err  error
}

// of returns the build named key (a package directory and its tags), new
// on first use.
func (bs *buildSet) of(key string) *build {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.m[key]
	if !ok {
		b = &build{}
		bs.m[key] = b
	}
	return b
}

// directory returns the directory binaries are built into, made on first
// use.
func (bs *buildSet) directory() (string, error) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.dir == "" {
		dir, err := os.MkdirTemp("", "proctest-")
		if err != nil {
			return "", err
		}
		bs.dir = dir
	}
	return bs.dir, nil
}

// goBuild builds pkg, whose directory is pkgDir, with tags into the
// shared directory, under a name of its own for each package directory and
// set of tags.
func goBuild(pkg, pkgDir string, tags []string) (string, error) {
	dir, err := builds.directory()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	sum := sha256.Sum256([]byte(pkgDir + " " + strings.Join(tags, ",")))
	bin := filepath.Join(dir, fmt.Sprintf("%s-%x", filepath.Base(pkgDir), sum[:4]))
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// RemoveBuilds removes the binaries Build made. Call it after the tests,
// from TestMain (pgtest.Main(m, proctest.RemoveBuilds)).
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
		builds.dir, builds.m = "", map[string]*build{}
	}
}

// Start starts bin with the test's environment plus env (NAME=value). The
// process is killed when the test ends, and its output goes to the test
// log if the test failed.
func Start(t testing.TB, bin string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", filepath.Base(bin), cmd.Process.Pid, out.String())
		}
	})
	return cmd
}

// Kill kills the process with SIGKILL and waits until it is gone.
func Kill(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
