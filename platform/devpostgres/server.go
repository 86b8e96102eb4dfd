package devpostgres

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxSocketPath is the room in sockaddr_un.sun_path, less the trailing NUL.
const maxSocketPath = 107

// connectAttemptTimeout bounds one readiness probe, so that a server that
// accepts TCP but hangs cannot stall the start.
const connectAttemptTimeout = time.Second

// serverArgs passes every setting on the command line, where it overrides
// postgresql.conf, so that a restart always runs with the current config.
func serverArgs(cfg Config, l layout, port int) []string {
	args := []string{
		"-D", l.cluster(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=" + socketDirSetting(l.socketDir()),
		"-c", "max_connections=200", // many pools of many test packages
		"-c", "log_line_prefix=%m [%p] ",
	}
	if cfg.Ephemeral {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Settings)) {
		args = append(args, "-c", name+"="+cfg.Settings[name])
	}
	return args
}

// socketDirSetting returns the quoted socket directory, or an empty list when
// the socket path would not fit in a sockaddr: clients use TCP anyway, and an
// over-long path would stop the server from starting at all.
func socketDirSetting(dir string) string {
	if len(dir)+len("/.s.PGSQL.65535") > maxSocketPath {
		return ""
	}
	return strconv.Quote(dir)
}

// startOnPort starts the server and waits until it accepts connections.
func startOnPort(ctx context.Context, cfg Config, bin string, l layout, o owner, log *os.File, port int) (*Server, error) {
	cmd := exec.Command(filepath.Join(bin, "postgres"), serverArgs(cfg, l, port)...)
	cmd.Dir = l.root
	cmd.Stdout, cmd.Stderr = log, log
	pm, err := startPostmaster(cmd, o.cred)
	if err != nil {
		return nil, err
	}
	e := &Server{pm: pm, port: port, database: cfg.Database, logger: cfg.Logger}
	if err := waitReady(ctx, e); err != nil {
		_ = e.kill()
		return nil, fmt.Errorf("start postgres on port %d: %w\n%s", port, err, logTail(l.logFile()))
	}
	return e, nil
}

// waitReady polls with real connections until the server accepts one: that
// is the only proof of readiness a client cares about.
func waitReady(ctx context.Context, e *Server) error {
	var lastErr error
	accepting := func() bool {
		if e.pm.Exited() {
			return true
		}
		attemptCtx, cancel := context.WithTimeout(ctx, connectAttemptTimeout)
		defer cancel()
		conn, err := pgconn.Connect(attemptCtx, e.adminURL())
		if err != nil {
			lastErr = err
			return false
		}
		_ = conn.Close(attemptCtx)
		return true
	}
	if err := poll(ctx, accepting); err != nil {
		return fmt.Errorf("wait for connections: %w (last attempt: %v)", err, lastErr)
	}
	if e.pm.Exited() {
		return fmt.Errorf("wait for connections: postgres exited")
	}
	return nil
}
