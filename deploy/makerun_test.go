package deploy

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"blockspace.exchange/platform/poll"
)

// TestMakeRunStopsOnSIGTERM: `make run &` (and `make run-kafka &`)
// stopped by its pid, SIGTERM to make alone as `kill %1` sends it, stops
// the whole stack: every process under make, the exchange, its broker and
// its PostgreSQL server, is gone afterwards (README "The two commands").
func TestMakeRunStopsOnSIGTERM(t *testing.T) {
	for _, target := range []string{"run", "run-kafka"} {
		t.Run(target, func(t *testing.T) { stopMakeTarget(t, target) })
	}
}

func stopMakeTarget(t *testing.T, target string) {
	dir, err := os.MkdirTemp("", "make-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The private Postgres runs as the postgres OS user.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 8)
	env := []string{"DATA_DIR=" + filepath.Join(dir, "data"), "LOG_LEVEL=warn"}
	for i, v := range []string{"HTTP_ADDR", "ADMIN_ADDR", "KAFKA_ADDR", "ORIGINATOR_ADDR", "SEARCHER_ADDR",
		"ORDERFLOW_ADDR", "DEV_BUILDER_ADDR", "CHAIN_ADDR"} {
		env = append(env, v+"=127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	mk := exec.Command("make", "--no-print-directory", target)
	mk.Dir = ".."
	mk.Env = append(outsideMake(os.Environ()), env...)
	var out bytes.Buffer // one writer for both: exec writes it from one goroutine at a time
	mk.Stdout, mk.Stderr = &out, &out
	// Once make has exited, Wait stops reading its output after a second
	// even if a process it left behind holds the pipe.
	mk.WaitDelay = time.Second
	// A group of its own, as a job of an interactive shell: the signal
	// below reaches make and nothing else.
	mk.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := mk.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{}) // closed once make has exited and its output is all in out
	go func() { waitErr = mk.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-mk.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("make %s said:\n%s", target, out.String())
		}
	})

	admin := "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/readyz"
	poll.Within(t, "the stack to be ready", 10*time.Minute, func() bool {
		select {
		case <-exited:
			t.Fatalf("make %s exited while starting: %v", target, waitErr)
		default:
		}
		r, err := http.Get(admin)
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	stack := descendants(t, mk.Process.Pid)
	postgres := postmasterPID(t, filepath.Join(dir, "data", "postgres", "cluster"))
	if len(stack) == 0 || postgres == 0 {
		t.Fatalf("processes under make %v, postgres pid %d", stack, postgres)
	}

	if err := mk.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	for _, pid := range append(stack, postgres) {
		poll.Within(t, "process "+strconv.Itoa(pid)+" to end", time.Minute, func() bool { return !alive(pid) })
	}
}

// outsideMake drops the variables a make running this test passes to its
// children, so that the make started here is a top-level one, as typed in
// a shell.
func outsideMake(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKELEVEL"
	})
}

// freePorts returns n distinct loopback ports the kernel reports free.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// descendants lists the processes below pid.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		child, _ := strconv.Atoi(f)
		out = append(append(out, child), descendants(t, child)...)
	}
	return out
}

// postmasterPID reads the server's pid from the first line of the data
// directory's postmaster.pid.
func postmasterPID(t *testing.T, dataDir string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Scan()
	pid, _ := strconv.Atoi(strings.TrimSpace(s.Text()))
	return pid
}

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
