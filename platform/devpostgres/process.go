package devpostgres

import (
	"fmt"
	"os/exec"
	"syscall"

	"blockspace.exchange/platform/childproc"
)

// startPostmaster starts cmd so that the server cannot outlive us
// (childproc.Start). The parent-death signal is SIGINT, PostgreSQL's fast
// shutdown: sessions are cut, the cluster checkpoints and exits cleanly,
// and no recovery is needed next time.
func startPostmaster(cmd *exec.Cmd, cred *syscall.Credential) (*childproc.Process, error) {
	p, err := childproc.Start(cmd, syscall.SIGINT, cred)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return p, nil
}
