package devpostgres

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// dataDir returns a data dir in a fresh temporary directory that the postgres
// OS user can reach when the tests run as root.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgdata-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + "/postgres"
}

// start starts a cluster that is stopped when the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	e, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

// execSQL runs one statement on the cluster's application database.
func execSQL(t *testing.T, e *Server, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), e.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// count returns SELECT count(*) FROM table on the application database.
func count(t *testing.T, e *Server, table string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), e.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}
