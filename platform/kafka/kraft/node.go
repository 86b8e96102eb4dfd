package kraft

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/childproc"
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
	proc *childproc.Process
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
	return n.proc != nil && !n.proc.Exited()
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

// writeConfig writes the node's server.properties and logging setup.
func (n *Node) writeConfig() error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "server.properties"), []byte(properties(n.cfg, n, n.voters)), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.yaml"), []byte(log4j2), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	return nil
}

// dataDir is the node's log directory.
func (n *Node) dataDir() string { return filepath.Join(n.dir, "data") }

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
	if n.proc != nil && !n.proc.Exited() {
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
	cmd := exec.Command(n.cfg.Java, args...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = log, log
	// SIGTERM on our death is the broker's controlled shutdown.
	p, err := childproc.Start(cmd, syscall.SIGTERM, nil)
	if err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
	}
	n.proc = p
	// Load commands read the JVM's CPU time through its pid.
	if err := os.WriteFile(n.PIDPath(), []byte(fmt.Sprintf("%d\n", p.Pid)), 0o644); err != nil {
		return fmt.Errorf("kraft: node %d: %w", n.id, err)
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
func waitFor(ctx context.Context, n *Node, p *childproc.Process, what string, ok func(context.Context) bool) error {
	for {
		if ok(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kraft: node %d: waiting until %s: %w\n%s", n.id, what, ctx.Err(), n.LogTail(40))
		case <-p.Done():
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
	_ = n.proc.Signal(syscall.SIGCONT) // a paused JVM cannot act on SIGTERM
	if err := n.proc.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("kraft: stop node %d: %w", n.id, err)
	}
	select {
	case <-n.proc.Done():
		return nil
	case <-time.After(timeout):
	}
	if err := n.proc.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kraft: kill node %d after %s: %w", n.id, timeout, err)
	}
	<-n.proc.Done()
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
	if err := n.proc.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kraft: kill node %d: %w", n.id, err)
	}
	<-n.proc.Done()
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
	if n.proc == nil || n.proc.Exited() {
		return fmt.Errorf("kraft: node %d is not running", n.id)
	}
	if err := n.proc.Signal(sig); err != nil {
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
