package kafka

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

func TestStartEmbeddedRejectsAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9092", "10.1.2.3:9092", "127.0.0.1", "127.0.0.1:70000", "127.0.0.1:http"} {
		if e, err := StartEmbedded(testContext(t), EmbeddedConfig{Addr: addr}); err == nil {
			_ = e.Close()
			t.Errorf("StartEmbedded(%q) succeeded", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name the address %q", err, addr)
		}
	}
}

func TestEmbeddedPortZeroPicksAFreePort(t *testing.T) {
	a, b := startBroker(t, ""), startBroker(t, "")
	if len(a.Addrs()) != 1 || a.Addrs()[0] == b.Addrs()[0] || strings.HasSuffix(a.Addrs()[0], ":0") {
		t.Fatalf("addresses %v and %v", a.Addrs(), b.Addrs())
	}
	if !strings.HasPrefix(a.Addrs()[0], "127.0.0.1:") {
		t.Fatalf("broker listens on %v, want 127.0.0.1 only", a.Addrs())
	}
}

// TestEmbeddedSurvivesRestart writes records and commits consumer group
// offsets, closes the broker and starts a new one on the same directory: the
// topics with their configs, the records and the committed offsets are back,
// and new records continue after the old ones.
func TestEmbeddedSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := StartEmbedded(testContext(t), EmbeddedConfig{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cl := newTestClient(t, first)
	if err := EnsureTopics(testContext(t), kadm.NewClient(cl), topics.Catalog()); err != nil {
		t.Fatal(err)
	}
	written := produceCommands(t, cl, 0, 5)
	commitFirst(t, first, "settler", 3)
	cl.Close()
	if err := first.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	second := startBroker(t, dir)
	adm := kadm.NewClient(newTestClient(t, second))
	if got := partitionCounts(t, adm, topics.LedgerCommands)[topics.LedgerCommands]; got != 8 {
		t.Fatalf("ledger-commands has %d partitions after restart, want 8", got)
	}
	if got := topicConfig(t, adm, topics.MatcherSnapshots, "cleanup.policy"); got != "compact" {
		t.Fatalf("matcher-snapshots cleanup.policy after restart = %q", got)
	}
	read := consumeAll(t, second, topics.LedgerCommands, len(written))
	assertSameRecords(t, read, written)

	offsets, err := adm.FetchOffsets(testContext(t), "settler")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offsets.Lookup(topics.LedgerCommands, written[0].Partition); !ok || o.At != 3 {
		t.Fatalf("committed offset after restart = %+v (found %v), want 3", o, ok)
	}

	more := produceCommands(t, newTestClient(t, second), 5, 1)
	if more[0].Offset != 5 {
		t.Fatalf("first record after restart got offset %d, want 5", more[0].Offset)
	}
}

// produceCommands writes n ledger commands of user 1; the key puts them all
// on one partition.
func produceCommands(t *testing.T, cl *kgo.Client, from, n int) []*kgo.Record {
	t.Helper()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		e := mustEnvelope(t, topics.TypeLedgerTransfer, fmt.Sprintf("cmd-%d", i), map[string]any{"n": i})
		r, err := NewRecord(topics.LedgerCommands, []byte("1"), e)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	written := produce(t, cl, rs...)
	for i, r := range written {
		if r.Partition != written[0].Partition || r.Offset != int64(from+i) {
			t.Fatalf("record %d went to partition %d offset %d", i, r.Partition, r.Offset)
		}
	}
	return written
}

// commitFirst consumes ledger-commands in a group and commits the first n.
func commitFirst(t *testing.T, e *Embedded, group string, n int) {
	t.Helper()
	cl := newTestClient(t, e,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics.LedgerCommands),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	var got []*kgo.Record
	for len(got) < n {
		fetches := cl.PollFetches(testContext(t))
		if err := fetches.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fetches.Records()...)
	}
	if err := cl.CommitRecords(testContext(t), got[:n]...); err != nil {
		t.Fatal(err)
	}
	cl.Close() // leave the group before the broker stops
}

func assertSameRecords(t *testing.T, got, want []*kgo.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("record %d: got %d %s=%s, want %d %s=%s", i, g.Offset, g.Key, g.Value, w.Offset, w.Key, w.Value)
		}
		typ, version, ok := RecordType(g)
		if !ok || typ != topics.TypeLedgerTransfer || version != 1 {
			t.Fatalf("record %d headers %v", i, g.Headers)
		}
	}
}
