package kafka

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

func TestLayoutDefaultsToTheCatalog(t *testing.T) {
	_, cl, _ := startCatalogBroker(t)
	l, err := Layout(testContext(t), cl, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := topics.DefaultLayout(topics.Orders)
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("layout %+v, want the default %+v", l, want)
	}
}

// TestRaisePartitionsKeepsLiveMarkets raises the orders family from 16 to 32
// partitions at slot 1000: every topic of the family grows, markets up to
// slot 1064 keep their partition, and records for later slots spread over
// the new partitions.
func TestRaisePartitionsKeepsLiveMarkets(t *testing.T) {
	e, cl, adm := startCatalogBroker(t)
	ctx := testContext(t)
	before, err := Layout(ctx, cl, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	after, err := RaisePartitions(ctx, adm, cl, topics.Orders, 32, 1000)
	if err != nil {
		t.Fatal(err)
	}
	from := uint64(1000 + topics.MarketHorizon + topics.LayoutMargin)
	if want := []topics.Epoch{{FromSlot: 0, Partitions: 16}, {FromSlot: from, Partitions: 32}}; !reflect.DeepEqual(after.Epochs, want) {
		t.Fatalf("epochs %v, want %v", after.Epochs, want)
	}
	for name, n := range partitionCounts(t, adm, topics.Orders, topics.OrderEvents, topics.Fills, topics.MatcherSnapshots) {
		if n != 32 {
			t.Errorf("%s has %d partitions after the raise, want 32", name, n)
		}
	}
	if n := partitionCounts(t, adm, topics.LedgerCommands)[topics.LedgerCommands]; n != 8 {
		t.Errorf("ledger-commands changed to %d partitions; it is not in the family", n)
	}

	published, err := Layout(ctx, newTestClient(t, e), topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(published, after) {
		t.Fatalf("published layout %+v, want %+v", published, after)
	}
	for slot := uint64(0); slot <= 1000+topics.MarketHorizon; slot++ {
		if before.Partition(slot) != published.Partition(slot) {
			t.Fatalf("slot %d moved from partition %d to %d", slot, before.Partition(slot), published.Partition(slot))
		}
	}
	assertSlotRecordPartition(t, cl, published, 1113, 25) // new epoch: 1113 mod 32, not mod 16 (9)
	assertSlotRecordPartition(t, cl, published, 1010, 2)  // live market: 1010 mod 16, not mod 32 (18)
}

func TestRaisePartitionsIsIdempotent(t *testing.T) {
	_, cl, adm := startCatalogBroker(t)
	ctx := testContext(t)
	first, err := RaisePartitions(ctx, adm, cl, topics.Orders, 24, 500)
	if err != nil {
		t.Fatal(err)
	}
	endBefore := layoutsEndOffset(t, adm)
	again, err := RaisePartitions(ctx, adm, cl, topics.Orders, 24, 700)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, again) || layoutsEndOffset(t, adm) != endBefore {
		t.Fatalf("second raise changed the layout: %+v then %+v", first, again)
	}
}

func TestRaisePartitionsRefuses(t *testing.T) {
	_, cl, adm := startCatalogBroker(t)
	ctx := testContext(t)
	tests := []struct {
		name  string
		topic string
		count int32
		want  string
	}{
		{"lowering", topics.Orders, 8, "would lower"},
		{"a topic that follows a layout", topics.Fills, 32, "does not own"},
		{"a key-hashed topic", topics.LedgerCommands, 32, "does not own"},
		{"an unknown topic", "nope", 32, "does not own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RaisePartitions(ctx, adm, cl, tt.topic, tt.count, 1000)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	if n := partitionCounts(t, adm, topics.Orders)[topics.Orders]; n != 16 {
		t.Fatalf("a refused raise changed orders to %d partitions", n)
	}
}

// assertSlotRecordPartition produces a tick for slot and checks the broker
// stored it on the partition the layout names.
func assertSlotRecordPartition(t *testing.T, cl *kgo.Client, layout topics.SlotLayout, slot uint64, want int32) {
	t.Helper()
	env, err := topics.ClockTick{Slot: slot, Kind: topics.TickMarketOpen}.Envelope(time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewSlotRecord(topics.Orders, layout, slot, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := produce(t, cl, r)[0].Partition; got != want {
		t.Fatalf("slot %d stored on partition %d, want %d", slot, got, want)
	}
}

func layoutsEndOffset(t *testing.T, adm *kadm.Client) int64 {
	t.Helper()
	end, err := layoutsEnd(testContext(t), adm)
	if err != nil {
		t.Fatal(err)
	}
	return end
}
