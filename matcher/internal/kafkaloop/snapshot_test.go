package kafkaloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// A matcher that snapshots, takes more commands, dies in the middle of a
// transaction and restarts rebuilds each partition from its last snapshot
// round plus the records after it, and reads nothing before the round;
// its outputs are byte for byte those of an uninterrupted run.
func TestRebuildFromSnapshotAndTail(t *testing.T) {
	cfg := startBroker(t)
	ctx := testContext(t)
	envs := commandStream(t, []uint64{100, 101, 117}, 200) // partitions 4 and 5
	want := expectedOutputs(t, envs)
	head, rest := envs[:400], envs[400:]
	produceCommands(t, ctx, cfg, head)

	first := newLoopWith(t, cfg, Config{MaxPollRecords: 40, SnapshotEvery: 90})
	var crashAt atomic.Int64 // 0: not yet
	first.beforeEnd = func() error {
		if n := crashAt.Load(); n > 0 && first.Stats().Records.Load() >= n {
			return errCrash
		}
		return nil
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	waitRunning(t, ctx, done, "the head applied", func() bool { return first.Stats().Records.Load() >= int64(len(head)) })
	if first.Stats().Snapshots.Load() == 0 {
		t.Fatal("no snapshot round was written")
	}
	crashAt.Store(int64(len(head) + 40))
	produceCommands(t, ctx, cfg, rest)
	if err := <-done; !errors.Is(err, errCrash) {
		t.Fatalf("the matcher ended with %v, not the crash", err)
	}
	stop()
	first.Close()

	// What the restarted matcher must read: per partition, the records
	// from the last committed snapshot round to the committed offset.
	var tail, skipped int64
	committed := committedOffsets(t, ctx, cfg)
	ends := endOffsets(t, ctx, cfg)
	var rebuilt int64
	for _, p := range []int32{4, 5} {
		if committed[p] == ends[p] {
			continue // nothing left to do there: no rebuild
		}
		rebuilt++
		_, offset := storedRound(t, ctx, cfg, p)
		if offset > committed[p] {
			t.Fatalf("partition %d: snapshot at %d beyond the committed offset %d", p, offset, committed[p])
		}
		tail += committed[p] - offset
		skipped += offset
	}
	if skipped == 0 {
		t.Fatal("the snapshots cover nothing")
	}

	second := newLoopWith(t, cfg, Config{MaxPollRecords: 40, SnapshotEvery: 90})
	assertSameOutputs(t, runToEnd(t, ctx, cfg, second, nil), want)
	st := second.Stats()
	if st.SnapshotsLoaded.Load() != rebuilt || rebuilt == 0 {
		t.Errorf("%d partitions started from a snapshot, want %d (and at least 1)", st.SnapshotsLoaded.Load(), rebuilt)
	}
	if st.RebuildRecords.Load() != tail {
		t.Errorf("the rebuild read %d records, want the %d after the snapshots (and not the %d before them)",
			st.RebuildRecords.Load(), tail, skipped)
	}
}

// runToEnd runs l, and then whileRunning when it is not nil, until the
// group has committed the end of orders; it returns the outputs read then
// and closes l.
func runToEnd(t *testing.T, ctx context.Context, cfg kafka.Config, l *Loop, whileRunning func()) map[partitionKey][][]byte {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	if whileRunning != nil {
		whileRunning()
	}
	got := readOutputs(t, ctx, cfg)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.Close()
	return got
}

// storedRound returns the slots' states and the offset of the snapshot
// round partition p of matcher-snapshots holds, which must be whole.
func storedRound(t *testing.T, ctx context.Context, cfg kafka.Config, p int32) (map[uint64][]byte, int64) {
	t.Helper()
	read, err := readSnapshots(ctx, cfg, discardLogger(), []int32{p})
	if err != nil {
		t.Fatal(err)
	}
	states, offset, err := read[p].round()
	if err != nil {
		t.Fatalf("partition %d: %v", p, err)
	}
	if len(states) == 0 {
		t.Fatalf("partition %d has no snapshot", p)
	}
	return states, offset
}

// waitRunning polls cond while the matcher of done runs; the matcher
// stopping or ctx ending first fails the test.
func waitRunning(t *testing.T, ctx context.Context, done chan error, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("the matcher stopped before %s: %v", what, err)
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func committedOffsets(t *testing.T, ctx context.Context, cfg kafka.Config) map[int32]int64 {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, DefaultGroup)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topics.Orders {
			out[o.Partition] = o.At
		}
	})
	return out
}

func endOffsets(t *testing.T, ctx context.Context, cfg kafka.Config) map[int32]int64 {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func newLoopWith(t testing.TB, cfg kafka.Config, c Config) *Loop {
	t.Helper()
	c.Kafka, c.TransactionalID, c.Logger = cfg, "matcher-test-0", discardLogger()
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A slot that decided 50,000 orders, whose state is several megabytes of
// JSON, snapshots in parts that each fit a record, and a matcher restarts
// from them; a later round with fewer parts deletes the parts it no longer
// writes.
func TestLargeSlotSnapshotsInParts(t *testing.T) {
	cfg := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const slot, p = 100, 4
	envs := largeSlotStream(t, slot, 50_000)
	head, rest := envs[:len(envs)-2000], envs[len(envs)-2000:]
	want := expectedOutputs(t, envs)
	produceCommands(t, ctx, cfg, head)

	first := newLoopWith(t, cfg, Config{SnapshotEvery: 20_000})
	first.snapshotPartBytes = 32 << 10
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- first.Run(runCtx) }()
	waitRunning(t, ctx, done, "the head committed", func() bool { return first.Stats().Committed.Load() >= int64(len(head)) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first.Close()
	if st := first.Stats(); st.Snapshots.Load() < 2 || st.Aborts.Load() != 0 {
		t.Fatalf("%d snapshot rounds and %d aborted transactions", st.Snapshots.Load(), st.Aborts.Load())
	}
	states, offset := storedRound(t, ctx, cfg, p)
	if len(states[slot]) <= 1_000_012 {
		t.Fatalf("the slot's state is %d bytes: one record would hold it", len(states[slot]))
	}
	manyParts := snapshotKeys(t, ctx, cfg, p)
	if len(manyParts) < 3 {
		t.Fatalf("the slot's snapshot is in %d parts: %v", len(manyParts), manyParts)
	}

	second := newLoopWith(t, cfg, Config{SnapshotEvery: 1000})
	got := runToEnd(t, ctx, cfg, second, func() { produceCommands(t, ctx, cfg, rest) })
	assertSameOutputs(t, got, want)
	st := second.Stats()
	if st.SnapshotsLoaded.Load() != 1 || st.RebuildRecords.Load() != int64(len(head))-offset {
		t.Errorf("%d partitions started from a snapshot, reading %d records; want 1, reading the %d after it",
			st.SnapshotsLoaded.Load(), st.RebuildRecords.Load(), int64(len(head))-offset)
	}
	// The second matcher cuts parts of the production size, records of
	// up to about 520 KB, which the broker must take (max.message.bytes).
	if st.Snapshots.Load() == 0 || st.Aborts.Load() != 0 {
		t.Errorf("the second matcher wrote %d snapshot rounds with %d aborted transactions", st.Snapshots.Load(), st.Aborts.Load())
	}

	// The trading_closed tick expired every live order: the last round
	// needs fewer parts, and the others are deleted.
	states, _ = storedRound(t, ctx, cfg, p)
	fewParts := snapshotKeys(t, ctx, cfg, p)
	if len(fewParts) >= len(manyParts) || len(states) != 1 {
		t.Fatalf("after the tick, keys %v (before it %v) hold %d slots", fewParts, manyParts, len(states))
	}
	for i := range len(fewParts) {
		if !fewParts[string(topics.MatcherSnapshotKey(slot, i))] {
			t.Fatalf("keys %v are not parts 0 to %d", fewParts, len(fewParts)-1)
		}
	}
}

// largeSlotStream returns the inputs of one slot that decide n orders,
// most of which rest: buys below sells, every tenth buy crossing, every
// thirteenth order off the price step; cancels of live and done orders
// and republished commands in between, and trading_closed at the end,
// which expires every order still live.
func largeSlotStream(t testing.TB, slot uint64, n int) []topics.Envelope {
	t.Helper()
	at := time.UnixMilli(1_738_824_000_000)
	var envs []topics.Envelope
	must := appender(t, &envs)
	instrument := topics.InstrumentID(topics.InclusionPreconf, slot)
	must(topics.MarketOpen{Slot: slot, Family: topics.InclusionPreconf, PriceStep: "0.000000001", MinPrice: "0.000000001",
		MaxPrice: "0.000001", QuantityStep: "1000", MinQuantity: "1000", MaxQuantity: "1000000",
		SellerUserID: 1, SellerAccountID: 11, TotalPreconf: 1_000_000_000_000}.Envelope(at))
	for i := range n {
		id := int64(i + 1)
		o := topics.OrderPlace{OrderID: id, UserID: 2, AccountID: 21, InstrumentID: instrument, Side: true,
			OrderType: topics.OrderTypeLimit, Quantity: fmt.Sprint(1000 * (1 + i%7)), Price: fmt.Sprintf("0.00000000%d", 1+i%4)}
		switch {
		case i%2 == 0:
			o.UserID, o.AccountID, o.Side, o.Price = 1, 11, false, fmt.Sprintf("0.00000000%d", 6+i%4)
		case i%10 == 1:
			o.Price = "0.000000009"
		}
		if i%13 == 0 {
			o.Price = "0.0000000015"
		}
		cmdID := fmt.Sprintf("place-%d", id)
		must(topics.OrderCommandEnvelope(topics.TypeOrderPlace, cmdID, at, o))
		if i%7 == 6 {
			must(topics.OrderCommandEnvelope(topics.TypeOrderCancel, cmdID+"-c", at,
				topics.OrderCancel{UserID: o.UserID, AccountID: o.AccountID, InstrumentID: instrument, OrderID: id - 4}))
		}
		if i%10 == 9 {
			envs = append(envs, envs[len(envs)-1]) // republished by the outbox
		}
	}
	must(topics.ClockTick{Slot: slot, Kind: topics.TickTradingClosed}.Envelope(at))
	return envs
}

// snapshotKeys returns the keys of partition p of matcher-snapshots whose
// newest record is not a tombstone.
func snapshotKeys(t *testing.T, ctx context.Context, cfg kafka.Config, p int32) map[string]bool {
	t.Helper()
	read, err := readSnapshots(ctx, cfg, discardLogger(), []int32{p})
	if err != nil {
		t.Fatal(err)
	}
	return read[p].keys
}

// matcher-snapshots is compacted on a real broker, and a matcher restores
// from what compaction left. The topic's segments roll every 100 ms and
// the cleaner takes any dirty log (the catalog's hour and tenth would not
// come round within a test); one partition takes many snapshot rounds of
// two slots, which finalize and are evicted by a later slot's
// finalization, so a round deletes their keys, and of two more slots. Once
// the cleaner has run, the partition holds a fraction of the records
// written and nothing of the evicted slots' states, and a new matcher
// starts from the compacted round, reading only the records after it,
// with outputs byte for byte those of an uninterrupted run.
func TestSnapshotTopicCompactedAndRestored(t *testing.T) {
	cfg := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const p = 4 // slots 100, 116, 196 and 212
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	set := func(v string) *string { return &v }
	altered, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "segment.ms", Value: set("100")},
		{Name: "min.cleanable.dirty.ratio", Value: set("0.01")},
		{Name: "delete.retention.ms", Value: set("0")},
	}, topics.MatcherSnapshots)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range altered {
		if r.Err != nil {
			t.Fatalf("alter %s: %v", r.Name, r.Err)
		}
	}

	at := time.UnixMilli(1_738_824_000_000)
	finalized := func(slots ...uint64) []topics.Envelope {
		var envs []topics.Envelope
		for _, s := range slots {
			appender(t, &envs)(topics.ClockTick{Slot: s, Kind: topics.TickFinalized}.Envelope(at))
		}
		return envs
	}
	// 100 and 116 trade and finalize; 196 finalizing evicts them (a slot
	// is kept 64 slots after its finalization); 212 trades on.
	var head []topics.Envelope
	head = append(head, commandStream(t, []uint64{100, 116}, 150)...)
	head = append(head, finalized(100, 116)...)
	head = append(head, commandStream(t, []uint64{196}, 60)...)
	head = append(head, finalized(196)...)
	head = append(head, commandStream(t, []uint64{212}, 200)...)
	tail := commandStream(t, []uint64{228}, 40)
	want := expectedOutputs(t, append(append([]topics.Envelope(nil), head...), tail...))

	produceCommands(t, ctx, cfg, head)
	first := newLoopWith(t, cfg, Config{MaxPollRecords: 20, SnapshotEvery: 20})
	runToEnd(t, ctx, cfg, first, nil)
	rounds := first.Stats().Snapshots.Load()
	if rounds < 20 {
		t.Fatalf("%d snapshot rounds", rounds)
	}

	// Wait for the cleaner: the evicted slots' states gone, and most
	// records written superseded and removed.
	var written, left int64
	var evicted []string
	for {
		written, left, evicted = snapshotLog(t, ctx, cfg, p, "100", "116")
		if len(evicted) == 0 && left*3 < written {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("partition %d of %s: %d records of %d written left; states of evicted slots: %v", p, topics.MatcherSnapshots, left, written, evicted)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("%d snapshot rounds; compaction left %d of the %d offsets of partition %d", rounds, left, written, p)
	states, offset := storedRound(t, ctx, cfg, p)
	if len(states) != 2 || states[196] == nil || states[212] == nil {
		t.Fatalf("the compacted round holds slots %v, want 196 and 212", slices.Sorted(maps.Keys(states)))
	}

	second := newLoopWith(t, cfg, Config{MaxPollRecords: 20, SnapshotEvery: 20})
	got := runToEnd(t, ctx, cfg, second, func() { produceCommands(t, ctx, cfg, tail) })
	assertSameOutputs(t, got, want)
	st := second.Stats()
	if st.SnapshotsLoaded.Load() != 1 || st.RebuildRecords.Load() != int64(len(head))-offset {
		t.Errorf("%d partitions started from a snapshot, reading %d records; want 1, reading the %d after the round at %d",
			st.SnapshotsLoaded.Load(), st.RebuildRecords.Load(), int64(len(head))-offset, offset)
	}
}

// snapshotLog reads partition p of matcher-snapshots from its start to its
// high watermark, read_uncommitted and with transaction markers, as the
// log holds it. It returns the offsets written (the high watermark), the
// records left (values, tombstones and markers), and which of keys still
// have a record with a value.
func snapshotLog(t *testing.T, ctx context.Context, cfg kafka.Config, p int32, keys ...string) (written, left int64, withValue []string) {
	t.Helper()
	found := map[string]bool{}
	for _, r := range readUncommitted(t, ctx, cfg, topics.MatcherSnapshots) {
		if r.Partition != p {
			continue
		}
		left++
		written = r.Offset + 1
		if r.Value != nil && !r.Attrs.IsControl() {
			found[string(r.Key)] = true
		}
	}
	for _, k := range keys {
		if found[k] {
			withValue = append(withValue, k)
		}
	}
	return written, left, withValue
}

// Reading matcher-snapshots ends when the offset below the last stable
// offset holds an aborted record, which a read_committed reader never
// sees: a transaction that wrote the partition, then another that is
// still open when the reader lists the end, then the first one's abort
// marker. The reader ends at the first offset it sees from there on, once
// the open transaction ends, and keeps nothing of either.
func TestReadSnapshotsEndsPastAnAbortedRecord(t *testing.T) {
	cfg := startBroker(t)
	ctx := testContext(t)
	const p = 3
	txn := func(id string) *kgo.Client {
		cl, err := kafka.NewClient(cfg, kgo.TransactionalID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Topic: topics.MatcherSnapshots, Partition: p, Key: []byte("100"), Value: []byte("not a snapshot")}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	aborted, open := txn("snapshot-writer-1"), txn("snapshot-writer-2")
	if err := aborted.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}

	// The coordinator writes the abort marker after it answered; until
	// then the aborted transaction holds the last stable offset at 0.
	var ends map[int32]int64
	for ends[p] != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("the last stable offset is %d, want 1: the open transaction's record", ends[p])
		case <-time.After(20 * time.Millisecond):
		}
		var err error
		if ends, err = snapshotBounds(ctx, cfg, []int32{p}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	stored := map[int32]storedSnapshots{p: newStoredSnapshots()}
	go func() { done <- readSnapshotsTo(ctx, cfg, discardLogger(), ends, stored) }()
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if keys := stored[p].keys; len(keys) != 0 {
		t.Fatalf("read keys %v below the end, where only an aborted record was", keys)
	}
}
