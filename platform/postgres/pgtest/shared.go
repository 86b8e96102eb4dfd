package pgtest

import (
	"context"
	"os"
	"sync"
	"testing"
)

// envURL names an existing server to use instead of an embedded cluster.
const envURL = "TEST_DATABASE_URL"

// shared is the server of this test binary, started on first use. It is the
// package's only mutable state: one cluster per binary is what keeps many
// small tests cheap.
var shared struct {
	once sync.Once
	srv  *Instance
	err  error
}

// sharedServer returns the binary's server, starting it on first use.
func sharedServer(t testing.TB) *Instance {
	t.Helper()
	shared.once.Do(func() {
		if url := os.Getenv(envURL); url != "" {
			shared.srv = &Instance{url: url}
			return
		}
		// Not the test's context: the cluster outlives the test that starts it.
		shared.srv, shared.err = startEmbedded(context.Background())
	})
	if shared.err != nil {
		t.Fatalf("pgtest: %v (set %s to use an existing server)", shared.err, envURL)
	}
	return shared.srv
}

// Main runs the tests, then the functions after (kafkatest.StopShared,
// say), then stops the shared cluster and removes its files. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	if shared.srv != nil {
		shared.srv.close()
	}
	os.Exit(code)
}
