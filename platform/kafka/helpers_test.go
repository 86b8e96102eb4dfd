package kafka

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka/kraft"
	"blockspace.exchange/platform/kafka/kraft/krafttest"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) {
	code := m.Run()
	krafttest.StopShared()
	os.Exit(code)
}

// testContext bounds a test so a broken broker fails it instead of hanging.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startKfake starts franz-go's in-process fake broker, the broker of make
// run (package kfakebroker wraps it, and imports this package).
func startKfake(t *testing.T) broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return kfakeCluster{c}
}

type kfakeCluster struct{ *kfake.Cluster }

func (c kfakeCluster) Addrs() []string { return c.ListenAddrs() }

// broker is what tests need of either broker: where it listens.
type broker interface{ Addrs() []string }

// startApache returns the test binary's shared Apache Kafka broker (the
// broker the exchange runs on in production), emptied of every topic for
// the test. kafkatest cannot serve here: it imports this package.
func startApache(t *testing.T) broker {
	t.Helper()
	return addrs(krafttest.Shared(t, nil))
}

// addrs is a broker known by its addresses.
type addrs []string

func (a addrs) Addrs() []string { return a }

// startOwnApache starts a single-node Apache Kafka broker of the test's
// own, which it may kill; it is killed when the test ends.
func startOwnApache(t *testing.T) *kraft.Cluster {
	t.Helper()
	c, err := kraft.Start(testContext(t), kraft.TestConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Node(1).Kill() })
	return c
}

func newTestClient(t *testing.T, e broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := NewClient(Config{Brokers: e.Addrs(), ClientID: t.Name()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// startCatalogBroker starts an Apache Kafka broker with every catalog topic.
func startCatalogBroker(t *testing.T) (broker, *kgo.Client, *kadm.Client) {
	t.Helper()
	return catalogOn(t, startApache(t))
}

// catalogOn creates every catalog topic on e and returns a client of it.
func catalogOn(t *testing.T, e broker) (broker, *kgo.Client, *kadm.Client) {
	t.Helper()
	cl := newTestClient(t, e)
	adm := kadm.NewClient(cl)
	if err := EnsureTopics(testContext(t), adm, topics.Catalog()); err != nil {
		t.Fatal(err)
	}
	return e, cl, adm
}

func mustEnvelope(t *testing.T, typ, id string, payload any) topics.Envelope {
	t.Helper()
	e, err := topics.NewEnvelope(typ, 1, id, time.UnixMilli(1738824000000), payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func produce(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	results := cl.ProduceSync(testContext(t), rs...)
	if err := results.FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := make([]*kgo.Record, len(results))
	for i, r := range results {
		out[i] = r.Record
	}
	return out
}

// consumeAll reads n records of topic from the start of every partition.
func consumeAll(t *testing.T, e broker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newTestClient(t, e, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testContext(t)
	var got []*kgo.Record
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatalf("consume %s after %d of %d records: %v", topic, len(got), n, err)
		}
		got = append(got, fetches.Records()...)
	}
	return got
}

func partitionCounts(t *testing.T, adm *kadm.Client, names ...string) map[string]int {
	t.Helper()
	details, err := listFresh(testContext(t), adm, names)
	if err != nil {
		t.Fatal(err)
	}
	counts := make(map[string]int, len(names))
	for _, name := range names {
		if d := details[name]; d.Err == nil {
			counts[name] = len(d.Partitions)
		}
	}
	return counts
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, key string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	return ""
}
