package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"blockspace.exchange/topics"
)

func TestEnsureTopicsCreatesTheCatalog(t *testing.T) {
	_, _, adm := startCatalogBroker(t)
	catalog := topics.Catalog()
	names := make([]string, len(catalog))
	for i, topic := range catalog {
		names[i] = topic.Name
	}
	counts := partitionCounts(t, adm, names...)
	for _, topic := range catalog {
		if counts[topic.Name] != int(topic.Partitions) {
			t.Errorf("%s has %d partitions, want %d", topic.Name, counts[topic.Name], topic.Partitions)
		}
		for key, want := range topic.Configs() {
			if got := topicConfig(t, adm, topic.Name, key); got != want {
				t.Errorf("%s %s = %q, want %q", topic.Name, key, got, want)
			}
		}
	}
}

func TestEnsureTopicsAlignsConfigsButNeverPartitions(t *testing.T) {
	adm := kadm.NewClient(newTestClient(t, startApache(t)))
	ctx := testContext(t)
	wrong := "1000"
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 32, -1, map[string]*string{"retention.ms": &wrong, "cleanup.policy": &compact}, topics.Orders); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, topics.LedgerCommands); err != nil {
		t.Fatal(err)
	}
	list := []topics.Topic{mustLookup(t, topics.Orders), mustLookup(t, topics.LedgerCommands), mustLookup(t, topics.Fills)}
	for range 2 { // a second run must be a no-op, not an error
		if err := EnsureTopics(ctx, adm, list); err != nil {
			t.Fatal(err)
		}
	}
	counts := partitionCounts(t, adm, topics.Orders, topics.LedgerCommands, topics.Fills)
	if counts[topics.Orders] != 32 || counts[topics.LedgerCommands] != 2 || counts[topics.Fills] != 16 {
		t.Errorf("partition counts %v: existing topics must keep theirs, missing ones get the catalog's", counts)
	}
	if got := topicConfig(t, adm, topics.Orders, "retention.ms"); got != "604800000" {
		t.Errorf("orders retention.ms = %q, want the catalog's 604800000", got)
	}
	if got := topicConfig(t, adm, topics.Orders, "cleanup.policy"); got != "delete" {
		t.Errorf("orders cleanup.policy = %q, want delete", got)
	}
}

func mustLookup(t *testing.T, name string) topics.Topic {
	t.Helper()
	topic, ok := topics.Lookup(name)
	if !ok {
		t.Fatalf("no catalog topic %s", name)
	}
	return topic
}
