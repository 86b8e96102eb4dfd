package kafkaloop

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Two matcher instances share the group while commands flow, and ops raise
// orders from 16 to 32 partitions in the middle (docs/architecture.md "One
// writer per slot"): commands
// of live markets stay on their partitions because producers use the
// layout, new markets land on the new partitions, and every partition's
// outputs are byte for byte those of one engine applying its commands in
// order: no gap, no duplicate, nothing moved.
func TestRaisePartitionsUnderLoadWithTwoInstances(t *testing.T) {
	cfg := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	live := make([]uint64, 12)
	for i := range live {
		live[i] = uint64(100 + i) // partitions 4..15 and 0..
	}
	// Slots from 208 on are beyond the new epoch (100 + 96) and on
	// partitions 16..31 of the raised layout.
	fresh := make([]uint64, 8)
	for i := range fresh {
		fresh[i] = uint64(208 + i)
	}
	liveCmds := commandStream(t, live, 120)
	freshCmds := commandStream(t, fresh, 60)
	before, _ := topics.DefaultLayout(topics.Orders)

	var loops []*Loop
	dones := make([]chan error, 2)
	runCtx, stop := context.WithCancel(ctx)
	for i := range 2 {
		l, err := New(Config{Kafka: cfg, TransactionalID: fmt.Sprintf("matcher-scale-%d", i), MaxPollRecords: 100,
			SnapshotEvery: 150, MetadataMaxAge: 250 * time.Millisecond, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		loops = append(loops, l)
		dones[i] = make(chan error, 1)
		go func() { dones[i] <- l.Run(runCtx) }()
	}

	// Load before the raise, in chunks, with the layout of 16 partitions.
	half := len(liveCmds) / 2
	for start := 0; start < half; start += 200 {
		produceIn(t, ctx, cfg, before, liveCmds[start:min(start+200, half)])
	}

	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	raised, err := kafka.RaisePartitions(ctx, kadm.NewClient(cl), cl, topics.Orders, 32, live[0])
	if err != nil {
		t.Fatal(err)
	}
	// Producers switch to the published layout, the one the raise made.
	after, err := kafka.Layout(ctx, cl, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, raised) {
		t.Fatalf("published layout %+v, the raise made %+v", after, raised)
	}
	for _, s := range live {
		if after.Partition(s) != before.Partition(s) {
			t.Fatalf("slot %d moved from partition %d to %d", s, before.Partition(s), after.Partition(s))
		}
	}
	for _, s := range fresh {
		if p := after.Partition(s); p < 16 {
			t.Fatalf("new slot %d is on old partition %d", s, p)
		}
	}

	// The rest of the live markets' commands and the new markets', mixed.
	rest := liveCmds[half:]
	for start, f := 0, 0; start < len(rest) || f < len(freshCmds); start, f = start+200, f+100 {
		chunk := append([]topics.Envelope(nil), rest[min(start, len(rest)):min(start+200, len(rest))]...)
		chunk = append(chunk, freshCmds[min(f, len(freshCmds)):min(f+100, len(freshCmds))]...)
		produceIn(t, ctx, cfg, after, chunk)
	}

	all := append(append([]topics.Envelope(nil), liveCmds...), freshCmds...)
	want := expectedOutputsIn(t, after, all)
	got := readOutputs(t, ctx, cfg)
	stop()
	for i, l := range loops {
		if err := <-dones[i]; err != nil {
			t.Fatal(err)
		}
		if l.Stats().Records.Load() == 0 {
			t.Errorf("instance %d applied nothing: the load was not shared", i)
		}
		if n := l.Stats().Skipped.Load(); n != 0 {
			t.Errorf("instance %d skipped %d records", i, n)
		}
	}
	assertSameOutputs(t, got, want)
	var onNew int
	for k, v := range got {
		if k.partition >= 16 {
			onNew += len(v)
		}
	}
	if onNew == 0 {
		t.Error("no output on the new partitions")
	}
}
