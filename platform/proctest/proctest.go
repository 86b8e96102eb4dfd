// Package proctest runs a service's own binary in a test, so that a test
// can kill it the way an operating system does (SIGKILL: no shutdown of
// any kind) and start it again.
package proctest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Build builds the main package pkg (a path as `go build` takes it, from
// the test's directory) into the test's temporary directory and returns
// the binary's path. Build tags, if any, select files that only tests
// build, such as the matcher's killtest stop point.
func Build(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
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
