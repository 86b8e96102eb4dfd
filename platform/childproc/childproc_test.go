package childproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A started child is alive in a process group of its own until signalled;
// once it has ended, Done is closed and signalling it again is harmless.
func TestSignalEndsTheChild(t *testing.T) {
	p, err := Start(exec.Command("sleep", "60"), syscall.SIGKILL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("the child exited at once")
	}
	if pgid, err := syscall.Getpgid(p.Pid); err != nil || pgid != p.Pid {
		t.Fatalf("the child's process group is %d (%v), want its own (%d)", pgid, err, p.Pid)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the child outlived SIGTERM")
	}
	if !p.Exited() {
		t.Fatal("Exited is false after Done closed")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling an ended child: %v", err)
	}
}

func TestStartReportsAMissingProgram(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/server"), syscall.SIGKILL, nil); err == nil {
		t.Fatal("started a program that does not exist")
	}
}
