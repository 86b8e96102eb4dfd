package settlement_test

import (
	"testing"

	"github.com/shopspring/decimal"

	"blockspace.exchange/settler/internal/settlement"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/topics"
)

// FuzzDecode feeds outside bytes, as the trading topics could carry them,
// to the settlement's decoder: it never panics, and what it accepts is in
// range (positive prices and quantities, fees within the value, a fill's
// sides apart), so that Apply can store it.
func FuzzDecode(f *testing.F) {
	s := settlementtest.NewStream(start)
	u := []settlementtest.Account{{User: 1, Account: 11}, {User: 2, Account: 21}}
	s.Open(slot, u[0], 1000, settlementtest.DefaultFees)
	sell := s.Place(u[0], topics.WholeBlock, slot, false, topics.OrderTypeLimit, "1", "1")
	buy := s.Place(u[1], topics.WholeBlock, slot, true, topics.OrderTypeLimit, "1", "1")
	s.Accept(sell, true)
	s.Accept(buy, false)
	s.Trade(buy, sell, "1", 1, 1000)
	for _, r := range s.Records {
		b, err := topics.Encode(r.Envelope)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(r.Topic, b)
	}
	f.Add(topics.Fills, []byte(`{"type":"trade.executed","version":1,"id":"fill:1","time":0,"data":{"tradeId":1,"instrumentId":"ETH-WB-1","slot":1,"price":"1e99999","quantity":"1"}}`))
	f.Add(topics.OrderEvents, []byte(`{"type":"order.filled","version":1,"id":"oe:1:1","time":0,"data":{"orderId":1,"quantity":"1","fulfilled":"2","status":10}}`))
	f.Fuzz(func(t *testing.T, topic string, b []byte) {
		e, err := topics.Decode(b)
		if err != nil || !settlement.Wanted(topic, e.Type) {
			return
		}
		r := settlement.Decode(topic, e, b)
		if r.Invalid != "" {
			return
		}
		switch {
		case r.Fill != nil:
			f := r.Fill
			price, qty := decimal.RequireFromString(f.Price), decimal.RequireFromString(f.Quantity)
			if !price.IsPositive() || !qty.IsPositive() || f.TakerOrderID == f.MakerOrderID ||
				decimal.RequireFromString(f.SellerFee).GreaterThan(price.Mul(qty)) {
				t.Fatalf("accepted fill %+v", f.Fill)
			}
		case r.Event != nil:
			if r.Event.OrderID <= 0 || decimal.RequireFromString(r.Event.Fulfilled).GreaterThan(decimal.RequireFromString(r.Event.Quantity)) {
				t.Fatalf("accepted event %+v", r.Event.OrderEvent)
			}
		case r.Status != nil:
			if _, slot, err := topics.ParseInstrumentID(r.Status.InstrumentID); err != nil || slot != r.Status.Slot {
				t.Fatalf("accepted status %+v", r.Status)
			}
		case r.Open == nil && r.CancelRejected == nil:
			t.Fatalf("record %s decoded to nothing", e.ID)
		}
	})
}
