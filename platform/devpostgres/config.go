package devpostgres

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
)

// DefaultDatabase is the application database created in a new embedded
// cluster when Config.Database is empty.
const DefaultDatabase = "exchange"

// Config describes a private PostgreSQL cluster run as a child process.
type Config struct {
	// DataDir holds everything of the cluster: the PostgreSQL data directory,
	// the unix socket, the server log and the remembered port. Typically
	// ".data/postgres". Created when missing.
	DataDir string
	// Port is the TCP port on 127.0.0.1. Zero reuses the port remembered in
	// DataDir when it is free, and otherwise picks a free port that is never
	// 5432, so a system server is left alone.
	Port int
	// BinDir holds initdb and postgres. Empty means the newest
	// /usr/lib/postgresql/*/bin, else the directory of postgres on PATH.
	BinDir string
	// Database is the application database created on first start.
	// Empty means DefaultDatabase.
	Database string
	// Ephemeral trades durability for speed: fsync, synchronous_commit and
	// full_page_writes are off. For throw-away test clusters only; an OS crash
	// can corrupt such a cluster.
	Ephemeral bool
	// Settings are extra server settings, each passed as -c name=value
	// after the ones the package sets (so they win), in name order: for a
	// measurement that needs, say, shared_preload_libraries. Nil adds none.
	Settings map[string]string
	// Logger receives lifecycle messages. Nil discards them. The server's own
	// log goes to postgres.log in DataDir.
	Logger *slog.Logger
}

// withDefaults validates the config and fills in defaults. DataDir becomes
// absolute because the server runs with its own working directory.
func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		return c, errors.New("embedded postgres config: DataDir is empty; set it, e.g. .data/postgres")
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("embedded postgres config: Port %d is out of range 0..65535", c.Port)
	}
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("embedded postgres config: DataDir: %w", err)
	}
	c.DataDir = dir
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}
