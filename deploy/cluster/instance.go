package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"blockspace.exchange/platform/childproc"
)

// Instance is one service process of the cluster: a binary built from
// <module>/cmd/<name>, started with the environment docker-compose.yml
// gives its service plus the runner's loopback addresses. It can be
// stopped, killed and started again on the same addresses, which is how
// the drills restart services.
type Instance struct {
	// Name is the instance's name, the service's with a number when the
	// service has several instances (matcher-2).
	Name string
	// Service is the compose service it is an instance of (matcher).
	Service string
	// Env is the process's whole environment.
	Env map[string]string

	bin     string
	logPath string

	mu   sync.Mutex
	proc *childproc.Process
}

// Admin is the address of the instance's operator endpoints (ADMIN_ADDR).
func (in *Instance) Admin() string { return in.Env["ADMIN_ADDR"] }

// LogPath is the file that holds everything the process wrote.
func (in *Instance) LogPath() string { return in.logPath }

// Start launches the process and returns once its /readyz answers 200.
func (in *Instance) Start(ctx context.Context, timeout time.Duration) error {
	if err := in.launch(); err != nil {
		return err
	}
	return in.WaitReady(ctx, timeout)
}

func (in *Instance) launch() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc != nil && !in.proc.Exited() {
		return fmt.Errorf("%s: already running (pid %d)", in.Name, in.proc.Pid)
	}
	log, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", in.Name, err)
	}
	defer log.Close()
	fmt.Fprintf(log, "--- %s started by the cluster runner at %s\n", in.Name, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(in.bin)
	cmd.Env = environ(in.Env)
	cmd.Stdout, cmd.Stderr = log, log
	// SIGKILL on the runner's death: a service never outlives the cluster.
	p, err := childproc.Start(cmd, syscall.SIGKILL, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", in.Name, err)
	}
	in.proc = p
	return nil
}

// environ is env as KEY=value lines, sorted, with the runner's PATH and
// HOME so that a service finds what any program needs and nothing else of
// the runner's environment.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env)+2)
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			if _, set := env[k]; !set {
				out = append(out, k+"="+v)
			}
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// WaitReady polls the instance's /readyz until it answers 200, the process
// ends (an error with the tail of its log) or timeout passes.
func (in *Instance) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	url := "http://" + in.Admin() + "/readyz"
	for {
		if ready(ctx, client, url) {
			return nil
		}
		in.mu.Lock()
		p := in.proc
		in.mu.Unlock()
		if p == nil || p.Exited() {
			return fmt.Errorf("%s ended before it was ready; the end of %s:\n%s", in.Name, in.logPath, tail(in.logPath, 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; the end of %s:\n%s", in.Name, timeout, in.logPath, tail(in.logPath, 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ready reports whether url, a /readyz, answers 200.
func ready(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Pid is the process id, 0 when it is not running.
func (in *Instance) Pid() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.proc == nil || in.proc.Exited() {
		return 0
	}
	return in.proc.Pid
}

// Running reports whether the process is alive.
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc != nil && !in.proc.Exited()
}

// Stop sends SIGTERM, as an orchestrator does, and waits up to grace for
// the process to drain and exit; then it is killed and Stop says so.
func (in *Instance) Stop(grace time.Duration) error {
	in.mu.Lock()
	p := in.proc
	in.mu.Unlock()
	if p == nil || p.Exited() {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("%s: %w", in.Name, err)
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(grace):
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.Done()
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", in.Name, grace)
}

// Kill ends the process with SIGKILL, a crash, and waits until it is gone.
func (in *Instance) Kill() error {
	in.mu.Lock()
	p := in.proc
	in.mu.Unlock()
	if p == nil || p.Exited() {
		return errors.New(in.Name + ": not running")
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s: %w", in.Name, err)
	}
	<-p.Done()
	return nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildBinaries builds the service binaries and topicctl from the
// repository, one `go build` for all of them, into cache, where go build
// links again only what changed since the last run (a fresh directory
// would cost every link again), then copies them into dir: the run
// executes its own copies, and a later build never changes what its
// processes start. Runs that build at the same time take turns on a lock
// in cache.
func buildBinaries(ctx context.Context, repo, cache, dir string) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("build service binaries: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("build service binaries: %w", err)
	}
	defer lock.Close() // closing the file releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("build service binaries: lock %s: %w", lock.Name(), err)
	}
	args := append([]string{"build", "-o", cache + string(filepath.Separator)}, binaryPackages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build service binaries: %w\n%s", err, out)
	}
	for _, pkg := range binaryPackages {
		name := filepath.Base(pkg)
		if err := copyFile(filepath.Join(dir, name), filepath.Join(cache, name), 0o755); err != nil {
			return fmt.Errorf("build service binaries: %w", err)
		}
	}
	return nil
}

// copyFile copies the file src to a new file dst with mode perm.
func copyFile(dst, src string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// binaryPackages are the main packages the cluster runs, each building a
// binary named after its directory.
var binaryPackages = []string{
	"./ingress/cmd/ingress",
	"./matcher/cmd/matcher",
	"./settler/cmd/settler",
	"./orderflow-relay/cmd/orderflow-relay",
	"./query-api/cmd/query-api",
	"./deploy/cmd/topicctl",
}
