package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/postgres"
)

// poolMaxConns keeps each test's pool small: many tests share one server and
// its max_connections.
const poolMaxConns = 8

// New returns a pool on a new database of the binary's shared server with
// migrations applied (nil applies none). The pool is closed and the database
// dropped when the test ends. pool.Config().ConnString() is its URL, for code
// under test that opens its own connections.
func New(t testing.TB, migrations fs.FS) *pgxpool.Pool {
	t.Helper()
	return sharedServer(t).New(t, migrations)
}

// New returns a pool on a new database of this server with migrations
// applied, like the package-level New.
func (s *Instance) New(t testing.TB, migrations fs.FS) *pgxpool.Pool {
	t.Helper()
	ctx := t.Context()
	dbURL, drop, err := s.createDatabase(ctx)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Logf("pgtest: %v", err) // the server may have been stopped by the test
		}
	})
	pool, err := postgres.Open(ctx, dbURL, postgres.Options{MaxConns: poolMaxConns})
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close) // runs before drop: cleanups run last-in first-out
	if migrations != nil {
		if _, err := postgres.Migrate(ctx, pool, migrations); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	return pool
}

// createDatabase makes an empty database with a unique name, from template0
// so that nothing a test left in template1 leaks into it, and returns its URL
// and the function that drops it.
func (s *Instance) createDatabase(ctx context.Context) (string, func() error, error) {
	name, err := uniqueName()
	if err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	dbURL, err := withDatabase(s.url, name)
	if err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := s.admin(ctx, "CREATE DATABASE "+ident+" TEMPLATE template0"); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() error {
		err := s.admin(context.Background(), "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
		if err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	return dbURL, drop, nil
}

// admin runs one statement on the server's default database. CREATE and DROP
// DATABASE cannot run in a transaction or a pool's prepared path, hence a
// plain connection.
func (s *Instance) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func uniqueName() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "pgtest_" + hex.EncodeToString(b), nil
}

// withDatabase returns serverURL with its database replaced.
func withDatabase(serverURL, database string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", envURL)
	}
	u.Path = "/" + database
	u.RawPath = ""
	return u.String(), nil
}
