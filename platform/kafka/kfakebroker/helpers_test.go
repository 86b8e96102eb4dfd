package kfakebroker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
)

// testContext bounds a test so a broken broker fails it instead of hanging.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startBroker(t *testing.T, dataDir string) *Broker {
	t.Helper()
	e, err := Start(testContext(t), Config{Addr: "127.0.0.1:0", DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func newTestClient(t *testing.T, e *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: e.Addrs(), ClientID: t.Name()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func partitionCount(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	details, err := adm.ListTopics(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		t.Fatalf("describe %s: %v", topic, d.Err)
	}
	return len(d.Partitions)
}

// topicConfig returns the value of key in topic's config, "" when unset.
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
