package postgres

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// postmaster is a running postgres server process.
type postmaster struct {
	proc *os.Process
	done chan struct{} // closed once the process has exited and been reaped
}

// startPostmaster starts cmd so that the server cannot outlive us.
//
// The kernel sends the parent-death signal when the *thread* that forked the
// child exits, not when the process does, and the Go runtime ends a thread when
// a goroutine locked to it returns. An unlocked fork could land on a thread
// that some other goroutine later locks and abandons, killing the server at a
// random moment. So the child is forked from a goroutine that locks its thread
// and keeps it, blocked in Wait, for exactly the child's lifetime.
//
// The signal is SIGINT, PostgreSQL's fast shutdown: sessions are cut, the
// cluster checkpoints and exits cleanly, and no recovery is needed next time.
// Setpgid puts the server in its own process group so that a Ctrl-C in a
// terminal reaches only us; we then stop the server after our own orderly
// shutdown, which may still need the database.
func startPostmaster(cmd *exec.Cmd, cred *syscall.Credential) (*postmaster, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		Pdeathsig:  syscall.SIGINT,
		Setpgid:    true,
	}
	pm := &postmaster{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		pm.proc = cmd.Process
		started <- nil
		_ = cmd.Wait() // the exit status of a server we stop or that crashed says nothing more than its log
		close(pm.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return pm, nil
}

// exited reports whether the process has ended.
func (pm *postmaster) exited() bool {
	select {
	case <-pm.done:
		return true
	default:
		return false
	}
}

// signal sends sig unless the process has already ended.
func (pm *postmaster) signal(sig os.Signal) error {
	if err := pm.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
