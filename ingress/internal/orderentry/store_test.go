package orderentry

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/catalog"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// TestCommandsAreTheRecordsOfTheirEnvelopes: the place records, encoded
// without reflection, are byte for byte what kafka.NewSlotRecord makes of
// the command's envelope, on the slot's partition of the layout.
func TestCommandsAreTheRecordsOfTheirEnvelopes(t *testing.T) {
	layout := topics.SlotLayout{Topic: topics.Orders, Epochs: []topics.Epoch{{FromSlot: 0, Partitions: 16}, {FromSlot: 1000, Partitions: 32}}}
	m := &catalog.Market{Params: market.Params{Family: topics.InclusionPreconf, Slot: 1013, Instrument: "ETH-PC-1013"}}
	at := time.UnixMilli(1_750_000_000_123)
	w := &write{layout: layout, at: at, orderIDs: []int64{7000, 7001}, accepted: []*order{
		{userID: 3, market: m, qty: decimal.NewFromInt(21000), price: decimal.RequireFromString("0.000000002"),
			item: placeItem{AccountID: 4, Side: true, OrderType: 2, Price: "0.0000000020", ClientOrderID: `a"<b>`, Passive: true}},
		{userID: 3, market: m, qty: decimal.NewFromInt(42000), item: placeItem{AccountID: 4, OrderType: 1}},
	}}
	recs := w.commands()
	want := []topics.OrderPlace{
		{OrderID: 7000, UserID: 3, AccountID: 4, InstrumentID: "ETH-PC-1013", Side: true, OrderType: 2, Quantity: "21000",
			Price: "0.000000002", ClientOrderID: `a"<b>`, Passive: true, Source: SourceAPI},
		{OrderID: 7001, UserID: 3, AccountID: 4, InstrumentID: "ETH-PC-1013", OrderType: 1, Quantity: "42000", Source: SourceAPI},
	}
	for i, cmd := range want {
		e, err := topics.OrderCommandEnvelope(topics.TypeOrderPlace, PlaceCommandID(cmd.OrderID), at, cmd)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewSlotRecord(topics.Orders, layout, 1013, e)
		if err != nil {
			t.Fatal(err)
		}
		got := recs[i]
		if got.Topic != r.Topic || got.Partition != r.Partition || got.Partition != 1013%32 || !bytes.Equal(got.Key, r.Key) ||
			!bytes.Equal(got.Value, r.Value) || !slices.EqualFunc(got.Headers, r.Headers, func(a, b kgo.RecordHeader) bool {
			return a.Key == b.Key && bytes.Equal(a.Value, b.Value)
		}) {
			t.Fatalf("record %d\n got %s %d %s %v\nwant %s %d %s %v", i, got.Key, got.Partition, got.Value, got.Headers, r.Key, r.Partition, r.Value, r.Headers)
		}
	}
}
