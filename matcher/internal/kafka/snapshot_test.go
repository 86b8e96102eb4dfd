package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	pkafka "blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// A matcher that snapshots, takes more commands, dies in the middle of a
// transaction and restarts rebuilds each partition from its last snapshot
// round plus the records after it, and reads nothing before the round;
// its outputs are byte for byte those of an uninterrupted run.
func TestRebuildFromSnapshotAndTail(t *testing.T) {
	ctx := testContext(t)
	cfg := startBroker(t, ctx)
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
		read, err := readSnapshots(ctx, cfg, discardLogger(), []int32{p})
		if err != nil {
			t.Fatal(err)
		}
		snaps := read[p]
		if len(snaps) == 0 {
			t.Fatalf("partition %d has no snapshot", p)
		}
		var offset int64
		for _, s := range snaps {
			offset = s.Offset
		}
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
	runCtx, stop = context.WithCancel(ctx)
	done = make(chan error, 1)
	go func() { done <- second.Run(runCtx) }()
	got := readOutputs(t, ctx, cfg)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	second.Close()
	assertSameOutputs(t, got, want)
	st := second.Stats()
	if st.SnapshotsLoaded.Load() != rebuilt || rebuilt == 0 {
		t.Errorf("%d partitions started from a snapshot, want %d (and at least 1)", st.SnapshotsLoaded.Load(), rebuilt)
	}
	if st.RebuildRecords.Load() != tail {
		t.Errorf("the rebuild read %d records, want the %d after the snapshots (and not the %d before them)",
			st.RebuildRecords.Load(), tail, skipped)
	}
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

func committedOffsets(t *testing.T, ctx context.Context, cfg pkafka.Config) map[int32]int64 {
	t.Helper()
	cl, err := pkafka.NewClient(cfg)
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

func endOffsets(t *testing.T, ctx context.Context, cfg pkafka.Config) map[int32]int64 {
	t.Helper()
	cl, err := pkafka.NewClient(cfg)
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

func newLoopWith(t testing.TB, cfg pkafka.Config, c Config) *Loop {
	t.Helper()
	c.Kafka, c.TransactionalID, c.Logger = cfg, "matcher-test-0", discardLogger()
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
