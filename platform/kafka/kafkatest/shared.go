package kafkatest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kraft/krafttest"
	"blockspace.exchange/topics"
)

// Shared returns the addresses of the test binary's shared broker, emptied
// for t (see krafttest.Shared): the topics of the catalog exist and hold no
// record, no consumer group and no open transaction is left from an
// earlier test. t holds the broker until it ends; a parallel test that
// asks for it meanwhile waits. A second call from t returns the broker as
// t left it, so that a test can restart what it runs on the log it wrote.
//
// Tests that stop, kill, pause or restart the broker, or change its
// partitions or configuration, use a broker of their own (StartBroker).
func Shared(t testing.TB) []string {
	t.Helper()
	return withCatalog(t, krafttest.Shared(t, catalog()))
}

// Empty empties the shared broker again for t, which holds it (Shared),
// as Shared did when t took it: the catalog's topics exist and hold no
// record, no group and no open transaction is left.
func Empty(t testing.TB) {
	t.Helper()
	withCatalog(t, krafttest.Empty(t, catalog()))
}

// withCatalog creates the catalog's missing topics on the emptied broker
// at addrs and returns addrs once every partition is served.
func withCatalog(t testing.TB, addrs []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := createCatalog(ctx, addrs); err != nil {
		t.Fatalf("kafkatest: create the catalog's topics: %v", err)
	}
	return addrs
}

// StopShared stops the shared broker after the tests (krafttest.StopShared).
// pgtest.Main takes it: pgtest.Main(m, kafkatest.StopShared).
func StopShared() { krafttest.StopShared() }

// Main runs the tests, then the functions after (proctest.RemoveBuilds,
// say), then stops the shared broker. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	StopShared()
	os.Exit(code)
}

// catalog is what an emptying may keep: the catalog's topics, untouched.
func catalog() krafttest.Keep {
	keep := krafttest.Keep{}
	for _, spec := range topics.Catalog() {
		keep[spec.Name] = spec.Partitions
	}
	return keep
}

// createCatalog creates the catalog's missing topics; EnsureTopics
// returns once every partition answers.
func createCatalog(ctx context.Context, addrs []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("kafkatest-catalog"))
	if err != nil {
		return err
	}
	defer cl.Close()
	return kafka.EnsureTopics(ctx, kadm.NewClient(cl), topics.Catalog())
}
