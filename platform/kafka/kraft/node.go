package kraft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Node is one broker-and-controller process of a Cluster.
type Node struct {
	cfg            Config
	id             int
	dir            string
	port           int
	controllerPort int
	voters         string

	// mu guards proc against a test that kills the node while a cleanup
	// stops it.
	mu   sync.Mutex
	proc *process
}

// process is a running JVM.
type process struct {
	pid  int
	done chan struct{} // closed once the process has exited and been reaped
}

// ID is the node's node.id.
func (n *Node) ID() int { return n.id }

// Addr is the node's client listener, host:port.
func (n *Node) Addr() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// LogPath is the file the node's broker log is appended to.
func (n *Node) LogPath() string { return filepath.Join(n.dir, "server.log") }

// PIDPath is the file holding the process id of the node's JVM, written
// at each start.
func (n *Node) PIDPath() string { return filepath.Join(n.dir, "kafka.pid") }

// Running reports whether the node's process is alive (it may be paused).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited()
}

// LogTail returns the last lines of the node's log, for failure messages.
func (n *Node) LogTail(lines int) string {
	b, err := os.ReadFile(n.LogPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// format writes the node's server.properties and logging setup, and
// formats its log directory unless an earlier run did.
func (n *Node) format(ctx context.Context, clusterID string) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "server.properties"), []byte(properties(n.cfg, n, n.voters)), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.yaml"), []byte(log4j2), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	if _, err := os.Stat(filepath.Join(n.dir, "data", "meta.properties")); err == nil {
		return nil
	}
	// The id is URL-safe base64 and may begin with '-': given as a
	// separate argument it would be read as an option.
	args := append(jvmArgs(n.cfg, n), "kafka.tools.StorageTool", "format", "--ignore-formatted",
		"--cluster-id="+clusterID, "--config="+filepath.Join(n.dir, "server.properties"))
	out, err := exec.CommandContext(ctx, "java", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kraft: node %d: format %s: %w\n%s", n.id, n.dir, err, out)
	}
	return nil
}

// Start launches the node's process on its ports and data and returns once
// its broker answers with itself registered, or fails with the log's tail
// when the process exits or the start timeout passes first.
func (n *Node) Start(ctx context.Context) error {
	if err := n.launch(); err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// launch starts the JVM without waiting for it to serve.
func (n *Node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.exited() {
		return fmt.Errorf("kraft: node %d is already running", n.id)
	}
	// Properties are rewritten: the voters' ports may have been chosen anew.
	if err := os.WriteFile(filepath.Join(n.dir, "server.properties"), []byte(properties(n.cfg, n, n.voters)), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	log, err := os.OpenFile(n.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	defer log.Close()
	fmt.Fprintf(log, "---- kraft: starting node %d at %s ----\n", n.id, time.Now().Format(time.RFC3339Nano))
	args := append(jvmArgs(n.cfg, n), "kafka.Kafka", filepath.Join(n.dir, "server.properties"))
	cmd := exec.Command("java", args...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = log, log
	p, err := startBound(cmd)
	if err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	n.proc = p
	// Load commands read the JVM's CPU time through its pid.
	if err := os.WriteFile(n.PIDPath(), []byte(fmt.Sprintf("%d\n", p.pid)), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	return nil
}

// startBound starts cmd so that the broker cannot outlive us.
//
// The kernel sends the parent-death signal when the thread that forked the
// child exits, not when the process does, and the Go runtime ends a thread
// when a goroutine locked to it returns. So the child is forked from a
// goroutine that locks its thread and keeps it, blocked in Wait, for
// exactly the child's lifetime. SIGTERM is the broker's controlled
// shutdown. Setpgid keeps a terminal's Ctrl-C to us, who stop the broker
// after the services that use it.
func startBound(cmd *exec.Cmd) (*process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	p := &process{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // the exit status says nothing the log does not
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start java: %w", err)
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// waitReady waits until the node's broker lists itself in its metadata:
// it is registered with the controller quorum and unfenced.
func (n *Node) waitReady(ctx context.Context) error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, n.cfg.StartTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ClientID("kraft-readiness"))
	if err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	return waitFor(ctx, n, p, "its broker answered", func(ctx context.Context) bool {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		m, err := adm.BrokerMetadata(try)
		if err != nil {
			return false
		}
		for _, b := range m.Brokers {
			if int(b.NodeID) == n.id {
				return true
			}
		}
		return false
	})
}

// waitFor polls ok every 50ms until it returns true, p exits, or ctx ends.
func waitFor(ctx context.Context, n *Node, p *process, what string, ok func(context.Context) bool) error {
	for {
		if ok(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kraft: node %d: waiting until %s: %w\n%s", n.id, what, ctx.Err(), n.LogTail(40))
		case <-p.done:
			return fmt.Errorf("kraft: node %d exited before %s:\n%s", n.id, what, n.LogTail(40))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the node down in order (SIGTERM: the broker hands its
// partitions over and flushes its log) and waits for it; past timeout it is
// killed. Stopping a node that is not running does nothing.
func (n *Node) Stop(timeout time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return nil
	}
	_ = n.proc.signal(syscall.SIGCONT) // a paused JVM cannot act on SIGTERM
	if err := n.proc.signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("kraft: stop node %d: %w", n.id, err)
	}
	select {
	case <-n.proc.done:
		return nil
	case <-time.After(timeout):
	}
	if err := n.proc.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kraft: kill node %d after %s: %w", n.id, timeout, err)
	}
	<-n.proc.done
	return fmt.Errorf("kraft: node %d did not stop within %s and was killed", n.id, timeout)
}

// Kill ends the node at once (SIGKILL), as a crash of its machine would,
// and waits until the process is gone.
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return nil
	}
	if err := n.proc.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kraft: kill node %d: %w", n.id, err)
	}
	<-n.proc.done
	return nil
}

// Pause freezes the node (SIGSTOP): its sockets stay open and answer
// nothing, as a long garbage-collection pause or a hung machine would.
func (n *Node) Pause() error { return n.send(syscall.SIGSTOP) }

// Resume lets a paused node go on (SIGCONT).
func (n *Node) Resume() error { return n.send(syscall.SIGCONT) }

func (n *Node) send(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.exited() {
		return fmt.Errorf("kraft: node %d is not running", n.id)
	}
	if err := n.proc.signal(sig); err != nil {
		return fmt.Errorf("kraft: signal node %d: %w", n.id, err)
	}
	return nil
}

// portTaken reports whether the node's last start failed because another
// process held one of its ports.
func (n *Node) portTaken() bool {
	b, err := os.ReadFile(n.LogPath())
	return err == nil && bytes.Contains(b, []byte("Address already in use"))
}
