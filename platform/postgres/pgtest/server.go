package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"blockspace.exchange/platform/devpostgres"
)

// Instance is a PostgreSQL server that tests create databases on: the shared
// one behind New, or a private one from Server.
type Instance struct {
	url string // the server's default database; other databases are derived from it
	dir string // temporary directory of an embedded cluster, "" for an external server

	// mu guards emb against a test that stops or starts the server while a
	// cleanup stops it too.
	mu  sync.Mutex
	emb *devpostgres.Server
}

// Server starts a private ephemeral cluster for this test, stopped and
// removed when the test ends. It is skipped when TEST_DATABASE_URL is set and
// the machine has no PostgreSQL binaries, since such a CI machine cannot
// start servers of its own.
func Server(t testing.TB) *Instance {
	t.Helper()
	srv, err := startEmbedded(t.Context())
	if err != nil && os.Getenv(envURL) != "" && errors.Is(err, devpostgres.ErrNoBinaries) {
		t.Skipf("pgtest: %v", err)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(srv.close)
	return srv
}

// URL is the URL of the server's default database. Use New for a database of
// the test's own.
func (s *Instance) URL() string { return s.url }

// Stop shuts the server down; its URL stays valid for Start.
func (s *Instance) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb == nil {
		t.Fatal("pgtest: only a server from pgtest.Server can be stopped")
	}
	if err := s.emb.Stop(t.Context()); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Start starts a stopped server again on the same port, so that pools
// holding its URL reconnect. It fails rather than move if the port was taken.
func (s *Instance) Start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb == nil {
		t.Fatal("pgtest: only a server from pgtest.Server can be started")
	}
	emb, err := devpostgres.Start(t.Context(), embeddedConfig(s.dir, s.emb.Port()))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.emb = emb
}

// startEmbedded creates an ephemeral cluster in a new temporary directory.
func startEmbedded(ctx context.Context) (*Instance, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	// The directory is 0700; when tests run as root the cluster runs as the
	// postgres OS user, which must be able to reach its data dir inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	emb, err := devpostgres.Start(ctx, embeddedConfig(dir, 0))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start server: %w", err)
	}
	return &Instance{url: emb.URL(), dir: dir, emb: emb}, nil
}

func embeddedConfig(dir string, port int) devpostgres.Config {
	return devpostgres.Config{DataDir: filepath.Join(dir, "postgres"), Port: port, Ephemeral: true}
}

// close stops an embedded cluster and removes its files.
func (s *Instance) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emb == nil {
		return
	}
	_ = s.emb.Stop(context.Background()) // a failed stop kills; nothing more to do
	_ = os.RemoveAll(s.dir)
}
