package devpostgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// superuser is the role initdb creates, whatever the OS user is, so that the
// URL does not depend on who started the cluster.
const superuser = "postgres"

// hbaConf replaces initdb's pg_hba.conf. Trust is safe only because the server
// listens on 127.0.0.1 and the socket directory is private to its owner.
const hbaConf = `# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  trust
`

// initCluster runs initdb unless the data area already holds a cluster.
// initdb writes into a scratch directory that is renamed into place at the
// end, so a crash halfway leaves nothing that looks like a cluster.
func initCluster(ctx context.Context, cfg Config, bin string, l layout, o owner, log *os.File) error {
	if _, err := os.Stat(filepath.Join(l.cluster(), "PG_VERSION")); err == nil {
		return nil
	}
	if _, err := os.Stat(l.cluster()); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("initdb: %s exists but holds no cluster; move it away", l.cluster())
	}
	if err := os.RemoveAll(l.clusterTmp()); err != nil {
		return fmt.Errorf("initdb: remove leftover: %w", err)
	}
	cfg.Logger.Info("creating postgres cluster", "dir", l.cluster())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), initdbArgs(cfg, l.clusterTmp())...)
	cmd.Dir = l.root
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, logTail(l.logFile()))
	}
	if err := writeHBA(l.clusterTmp(), o); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := os.Rename(l.clusterTmp(), l.cluster()); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

// initdbArgs uses the C locale so that sorting and the cluster do not depend on
// which locales the machine happens to have installed.
func initdbArgs(cfg Config, dir string) []string {
	args := []string{
		"--pgdata=" + dir,
		"--username=" + superuser,
		"--auth=trust",
		"--encoding=UTF8",
		"--locale=C",
	}
	if cfg.Ephemeral {
		args = append(args, "--no-sync")
	}
	return args
}

func writeHBA(clusterDir string, o owner) error {
	path := filepath.Join(clusterDir, "pg_hba.conf")
	if err := os.WriteFile(path, []byte(hbaConf), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	return o.chown(path)
}

// ensureDatabase creates the application database on the first start.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil || exists {
		return wrapErr("create database "+name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// wrapErr wraps err with the operation's name and keeps nil as nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
