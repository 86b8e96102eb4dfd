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

// TestProps are the broker settings of tests, over kraft's defaults: few
// partitions of the internal topics (a fresh broker creates them on first
// use), segments of 1 MiB and a log cleaner that looks every 200 ms so that
// compaction happens within a test, a transaction coordinator that aborts
// timed-out transactions within a second of their timeout, and a broker
// session of 3 s, so that a killed broker started again registers within
// seconds (the controller refuses a new incarnation while the old one's
// session lasts; the default is 9 s).
var TestProps = map[string]string{
	"offsets.topic.num.partitions":                                "5",
	"transaction.state.log.num.partitions":                        "5",
	"log.segment.bytes":                                           "1048576",
	"log.cleaner.backoff.ms":                                      "200",
	"log.retention.check.interval.ms":                             "1000",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	"broker.heartbeat.interval.ms":                                "500",
	"broker.session.timeout.ms":                                   "3000",
	"num.io.threads":                                              "4",
	"num.network.threads":                                         "2",
	"background.threads":                                          "4",
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
	c, err := kraft.Start(t.Context(), kraft.Config{Dir: dir, Props: TestProps, QuickStart: true, Heap: "384m"})
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
