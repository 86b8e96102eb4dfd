// Package childproc starts server processes (the embedded PostgreSQL, the
// local Apache Kafka nodes) that cannot outlive the Go process that
// started them.
package childproc

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// Process is a started child process.
type Process struct {
	// Pid is the child's process id.
	Pid  int
	done chan struct{} // closed once the child has exited and been reaped
}

// Start starts cmd so that the kernel sends the child deathSignal when
// we end, however we end, and puts it in a process group of its own.
//
// The kernel sends the parent-death signal when the *thread* that forked
// the child exits, not when the process does, and the Go runtime ends a
// thread when a goroutine locked to it returns. An unlocked fork could land
// on a thread that some other goroutine later locks and abandons, killing
// the child at a random moment. So the child is forked from a goroutine
// that locks its thread and keeps it, blocked in Wait, for exactly the
// child's lifetime. The own process group keeps a terminal's Ctrl-C to us,
// who stop the child after our own orderly shutdown, which may still need
// it. cred, when not nil, is the user the child runs as.
func Start(cmd *exec.Cmd, deathSignal syscall.Signal, cred *syscall.Credential) (*Process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: deathSignal, Setpgid: true}
	p := &Process{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.Pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait() // a server's exit status says nothing its log does not
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return p, nil
}

// Done is closed once the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig unless the child has already ended.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := syscall.Kill(p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
