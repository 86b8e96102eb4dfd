package kfakebroker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/topics"
)

func TestStartRejectsAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9092", "10.1.2.3:9092", "127.0.0.1", "127.0.0.1:70000", "127.0.0.1:http"} {
		if e, err := Start(testContext(t), Config{Addr: addr}); err == nil {
			_ = e.Close()
			t.Errorf("Start(%q) succeeded", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name the address %q", err, addr)
		}
	}
}

func TestPortZeroPicksAFreePort(t *testing.T) {
	a, b := startBroker(t, ""), startBroker(t, "")
	if len(a.Addrs()) != 1 || a.Addrs()[0] == b.Addrs()[0] || strings.HasSuffix(a.Addrs()[0], ":0") {
		t.Fatalf("addresses %v and %v", a.Addrs(), b.Addrs())
	}
	if !strings.HasPrefix(a.Addrs()[0], "127.0.0.1:") {
		t.Fatalf("broker listens on %v, want 127.0.0.1 only", a.Addrs())
	}
}

// TestBrokerSurvivesRestart writes records and commits consumer group
// offsets, closes the broker and starts a new one on the same directory: the
// topics with their configs, the records and the committed offsets are back,
// and new records continue after the old ones.
func TestBrokerSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(testContext(t), Config{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cl := newTestClient(t, first)
	if err := kafka.EnsureTopics(testContext(t), kadm.NewClient(cl), topics.Catalog()); err != nil {
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
	if got := partitionCount(t, adm, topics.LedgerCommands); got != 8 {
		t.Fatalf("ledger-commands has %d partitions after restart, want 8", got)
	}
	if got := topicConfig(t, adm, topics.MatcherSnapshots, "cleanup.policy"); got != "compact" {
		t.Fatalf("matcher-snapshots cleanup.policy after restart = %q", got)
	}
	read := kafkatest.ReadToEnd(testContext(t), t, newTestClient(t, second), topics.LedgerCommands)
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
		e, err := topics.NewEnvelope(topics.TypeLedgerTransfer, 1, fmt.Sprintf("cmd-%d", i), time.UnixMilli(1738824000000), map[string]any{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewRecord(topics.LedgerCommands, []byte("1"), e)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	results := cl.ProduceSync(testContext(t), rs...)
	if err := results.FirstErr(); err != nil {
		t.Fatal(err)
	}
	var written []*kgo.Record
	for i, res := range results {
		r := res.Record
		written = append(written, r)
		if r.Partition != written[0].Partition || r.Offset != int64(from+i) {
			t.Fatalf("record %d went to partition %d offset %d", i, r.Partition, r.Offset)
		}
	}
	return written
}

// commitFirst consumes ledger-commands in a group and commits the first n.
func commitFirst(t *testing.T, e *Broker, group string, n int) {
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
		typ, version, ok := kafka.RecordType(g)
		if !ok || typ != topics.TypeLedgerTransfer || version != 1 {
			t.Fatalf("record %d headers %v", i, g.Headers)
		}
	}
}
