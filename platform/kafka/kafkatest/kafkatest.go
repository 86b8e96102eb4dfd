// Package kafkatest holds helpers for tests that run on a real Apache Kafka
// broker and read what a service published to it.
//
// Start and Shared give a test the binary's shared broker, started on first
// use and emptied for each test that takes it (tests take it one at a
// time). StartBroker starts a broker of the test's own, for tests that
// stop, kill, pause or restart it, or change its partitions. Wire Main (or
// pgtest.Main with StopShared) into TestMain so that the shared broker is
// stopped and its files removed at the end.
package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
)

// Start returns a client of the test binary's shared Apache Kafka broker,
// emptied for the test (see Shared), that publishes without linger, as
// the services' producers do, and the broker's addresses.
func Start(t testing.TB) (*kgo.Client, []string) {
	t.Helper()
	addrs := Shared(t)
	cl, err := kafka.NewClient(kafka.Config{Brokers: addrs}, kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, addrs
}

// ReadToEnd returns every committed record of topic below the last stable
// offsets the broker lists when it is called (once the transactions open
// then have ended; see settledEnds), partition by partition in
// log order, reading with a client of its own that reaches the brokers as
// cl does. Reading up to listed offsets, rather than until the broker goes
// quiet, cannot end early on a slow fetch.
//
// The topic may be written in transactions. Their commit and abort
// markers take offsets of their own, and a read_committed reader hands
// out no record at those offsets nor at aborted ones, so the last offset
// below the end is often one it never sees. The reader therefore keeps
// control records: with no transaction open, the offset just below the
// last stable offset holds either a record it hands out or a marker, and
// reaching it ends the partition. Markers are not returned. While a
// transaction is open the last stable offset stops at its first record,
// and the record below may be an aborted one whose marker comes later;
// the partition then ends at the first offset seen beyond it, once the
// open transaction ends.
func ReadToEnd(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	return readBelow(ctx, t, cl, topic, settledEnds(ctx, t, cl, topic), false)
}

// ReadUncommitted returns every record of topic below the high watermarks
// the broker lists when it is called, as a read_uncommitted reader sees
// them: the records of aborted and open transactions, and the commit and
// abort markers, too. Tests use it to see what a transaction that must
// stay invisible left in the log.
func ReadUncommitted(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	return readBelow(ctx, t, cl, topic, listOffsets(ctx, t, cl, topic, false), true)
}

// readBelow reads each partition of topic from its start to the end given,
// read_committed unless uncommitted is set, keeping control records only
// when it is (see ReadToEnd for why the reader asks for them either way).
func readBelow(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, ends map[int32]int64, uncommitted bool) []*kgo.Record {
	t.Helper()
	want := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			want[p] = end
			from[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(want) == 0 {
		return nil
	}
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}), kgo.KeepControlRecords()}
	if uncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	}
	reader, err := kafka.NewReader(cl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v; partitions short of their end: %v", topic, ctx.Err(), want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok {
				return
			}
			if r.Offset < end && (uncommitted || !r.Attrs.IsControl()) {
				out = append(out, r)
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

// settleWait bounds how long settledEnds waits for open transactions.
const settleWait = 10 * time.Second

// settledEnds returns each partition's last stable offset once it has
// reached the high watermark, or as it stands after settleWait. A real
// broker answers a transaction's commit before the coordinator has written
// its markers: until the marker is in, the last stable offset stays at the
// transaction's first record, and a read of what was committed before the
// call would miss it. A producer that keeps a transaction open for longer
// has not committed what follows.
func settledEnds(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	deadline := time.Now().Add(settleWait)
	for {
		stable, high := listOffsets(ctx, t, cl, topic, true), listOffsets(ctx, t, cl, topic, false)
		open := false
		for p, end := range stable {
			open = open || end < high[p]
		}
		if !open || time.Now().After(deadline) {
			return stable
		}
		select {
		case <-ctx.Done():
			return stable
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitConsumed returns once group has committed, on every partition of
// topic, the end offset the broker lists when it is called: the group has
// consumed every record written before the call, and a group that commits
// its offsets in transactions with what it produced (consume, transform,
// produce) has committed its outputs of those records too, so ReadToEnd
// of its output topics then returns them all. The topic must be written
// without transactions: a group's committed offset never passes a
// trailing commit marker. The group is asked every 20 ms until ctx ends,
// which fails the test.
func WaitConsumed(ctx context.Context, t testing.TB, cl *kgo.Client, group, topic string) {
	t.Helper()
	ends := listOffsets(ctx, t, cl, topic, false)
	adm := kadm.NewClient(cl)
	behind := map[int32][2]int64{}
	var lastErr error
	for {
		clear(behind)
		offsets, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = offsets.Error()
		}
		lastErr = err
		for p, end := range ends {
			o, ok := offsets.Lookup(topic, p)
			if end > 0 && (err != nil || !ok || o.At < end) {
				behind[p] = [2]int64{o.At, end}
			}
		}
		if len(behind) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never committed the end of %s: partition: [committed end] %v (last error %v)", group, topic, behind, lastErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Committed is the sum of group's committed offsets over the partitions
// of topic it has committed: how many of their records it has consumed.
func Committed(ctx context.Context, cl *kgo.Client, group, topic string) (int64, error) {
	offsets, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var n int64
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At > 0 {
			n += o.At
		}
	})
	return n, nil
}

// listOffsets returns each partition's high watermark, or its last stable
// offset when committed is set.
func listOffsets(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, committed bool) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(cl)
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets
	}
	// Asking for authorized operations bypasses the client's metadata
	// cache, which may still hold the topic as unknown from before it was
	// created.
	listed, err := list(kadm.WithAuthorizedOps(ctx), topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}
