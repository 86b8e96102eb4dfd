package kafkatest

import (
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kraft"
	"blockspace.exchange/topics"
)

// Broker is a single-node Apache Kafka cluster (one combined broker and
// controller in KRaft mode) of one test, on free loopback ports with a data
// directory of its own. Its Node can be stopped, killed, paused and started
// again on the same ports and data.
type Broker struct {
	*kraft.Cluster
}

// StartBroker starts a broker for t and stops it when t ends. The broker's
// files live in a temporary directory, removed when the test passes and
// kept, with the tail of the broker's log printed, when it fails. The test
// fails at once when the broker's jars are missing (scripts/ensure-kafka.sh
// resolves them; make test runs it).
func StartBroker(t testing.TB) *Broker {
	t.Helper()
	dir, err := os.MkdirTemp("", "kafkatest-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kraft.Start(t.Context(), kraft.TestConfig(dir))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("kafkatest: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_ = n.Kill() // the data is thrown away; no need for an orderly stop
		}
		if t.Failed() {
			t.Logf("kafkatest: broker files kept in %s; the log ends:\n%s", dir, c.Node(1).LogTail(60))
			return
		}
		_ = os.RemoveAll(dir)
	})
	return &Broker{Cluster: c}
}

// Node is the broker's only node.
func (b *Broker) Node() *kraft.Node { return b.Cluster.Node(1) }

// Client returns a client of the broker, closed when t ends, that
// publishes without linger, as the services' producers do, after creating
// the topics of the catalog (if they are not there yet).
func (b *Broker) Client(t testing.TB) *kgo.Client {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: b.Addrs()}, kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := kafka.EnsureTopics(t.Context(), kadm.NewClient(cl), topics.Catalog()); err != nil {
		t.Fatal(err)
	}
	return cl
}

// Restart stops the broker in order and starts it again on the same ports
// and data, as a rolling restart of a one-node cluster would.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.Node().Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Node().Start(t.Context()); err != nil {
		t.Fatal(err)
	}
}
