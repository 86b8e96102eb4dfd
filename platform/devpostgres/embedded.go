package devpostgres

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"syscall"

	"blockspace.exchange/platform/childproc"
)

// portAttempts bounds how often a start moves to another port because some
// other program took the chosen one between our check and the server's bind.
const portAttempts = 3

// Server is a running private PostgreSQL server. Its life is bound to this
// process: if we die, however abruptly, the kernel asks it for a fast shutdown.
type Server struct {
	pm       *childproc.Process
	port     int
	database string
	logger   *slog.Logger
}

// Start creates the cluster in cfg.DataDir when there is none, starts
// the server on 127.0.0.1 and returns once it accepts connections. A server
// left over from a crashed run on the same directory is cleaned up first.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	bin, err := findBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	o, err := currentOwner()
	if err != nil {
		return nil, err
	}
	l := layout{root: cfg.DataDir}
	log, err := prepareDataArea(l, o)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the server keeps its own copy of the descriptor
	if err := initCluster(ctx, cfg, bin, l, o, log); err != nil {
		return nil, err
	}
	if err := clearStaleLock(ctx, l); err != nil {
		return nil, err
	}
	e, err := launch(ctx, cfg, bin, l, o, log)
	if err != nil {
		return nil, err
	}
	if err := finishStart(ctx, e, cfg, l, o); err != nil {
		_ = e.kill()
		return nil, err
	}
	cfg.Logger.Info("postgres started", "url", e.URL(), "pid", e.Pid(), "dir", cfg.DataDir)
	return e, nil
}

// prepareDataArea creates the data area, owned by the cluster's OS user, and
// opens the log file for appending.
func prepareDataArea(l layout, o owner) (*os.File, error) {
	if err := o.mkdirOwned(l.root); err != nil {
		return nil, fmt.Errorf("prepare data dir: %w", err)
	}
	if err := o.checkTraversable(l.root); err != nil {
		return nil, err
	}
	if err := o.mkdirOwned(l.socketDir()); err != nil {
		return nil, fmt.Errorf("prepare data dir: %w", err)
	}
	log, err := os.OpenFile(l.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("prepare data dir: open log: %w", err)
	}
	if err := o.chown(l.logFile()); err != nil {
		log.Close()
		return nil, fmt.Errorf("prepare data dir: %w", err)
	}
	return log, nil
}

// launch starts the server, moving to another port when the chosen one was
// taken in the meantime. An explicit port is never moved.
func launch(ctx context.Context, cfg Config, bin string, l layout, o owner, log *os.File) (*Server, error) {
	for attempt := 1; ; attempt++ {
		port, err := choosePort(cfg.Port, l.portFile())
		if err != nil {
			return nil, err
		}
		e, err := startOnPort(ctx, cfg, bin, l, o, log, port)
		if err == nil {
			return e, nil
		}
		if cfg.Port != 0 || attempt == portAttempts || portFree(port) {
			return nil, err
		}
		cfg.Logger.Warn("postgres port was taken while starting; trying another", "port", port)
	}
}

// finishStart creates the application database and remembers the port.
func finishStart(ctx context.Context, e *Server, cfg Config, l layout, o owner) error {
	if err := ensureDatabase(ctx, e.adminURL(), cfg.Database); err != nil {
		return err
	}
	if err := writePort(l.portFile(), e.port); err != nil {
		return err
	}
	return o.chown(l.portFile())
}

// URL is a postgres:// URL of the application database for pgx.
func (e *Server) URL() string { return e.urlFor(e.database) }

// adminURL points at the maintenance database, which always exists.
func (e *Server) adminURL() string { return e.urlFor("postgres") }

func (e *Server) urlFor(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, e.port, database)
}

// Port is the TCP port the server listens on at 127.0.0.1.
func (e *Server) Port() int { return e.port }

// Pid is the process id of the postmaster.
func (e *Server) Pid() int { return e.pm.Pid }

// Done is closed when the server process has exited, whether through Stop or
// not, so that a supervisor can notice a server that died.
func (e *Server) Done() <-chan struct{} { return e.pm.Done() }

// Stop asks for a fast shutdown (sessions are cut, a checkpoint is written)
// and waits for the process to exit. When ctx ends first the server is
// killed; the next start recovers from its WAL. Stopping a stopped server
// is a no-op.
func (e *Server) Stop(ctx context.Context) error {
	if e.pm.Exited() {
		return nil
	}
	if err := e.pm.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	select {
	case <-e.pm.Done():
		e.logger.Info("postgres stopped", "pid", e.Pid())
		return nil
	case <-ctx.Done():
		_ = e.kill()
		return fmt.Errorf("stop postgres: fast shutdown did not finish, killed pid %d: %w", e.Pid(), ctx.Err())
	}
}

// kill ends the server at once and waits for it to be reaped. Its backends
// notice and exit by themselves.
func (e *Server) kill() error {
	err := e.pm.Signal(syscall.SIGKILL)
	<-e.pm.Done()
	return err
}
