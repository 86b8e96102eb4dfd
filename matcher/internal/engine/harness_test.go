package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/topics"
)

// The fixture slot: seller user 1 with account 11; traders 2/21 and 3/31.
const (
	testSlot      = 100
	seller        = 11
	alice         = 21
	bob           = 31
	wholeBlockID  = "ETH-WB-100"
	inclusionID   = "ETH-PC-100"
	testPreconf   = 1_000_000
	testTimeStart = 1_738_824_000_000
)

func userOf(account int64) int64 { return account / 10 }

// harness feeds commands to an engine and renders its outputs compactly.
type harness struct {
	t   *testing.T
	e   *Engine
	seq int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, e: New()}
	h.apply(marketOpen(testSlot, topics.WholeBlock))
	h.apply(marketOpen(testSlot, topics.InclusionPreconf))
	return h
}

func marketOpen(slot uint64, f topics.Family) topics.MarketOpen {
	m := topics.MarketOpen{
		Slot: slot, Family: f, SellerUserID: 1, SellerAccountID: seller,
		TotalGas: 30_000_000, TotalPreconf: testPreconf,
		BuyFeeRate: "0.001", PrimarySellFeeRate: "0.002", SecondarySellFeeRate: "0.0005",
	}
	if f == topics.WholeBlock {
		m.PriceStep, m.MinPrice, m.MaxPrice = "0.01", "0.01", "10"
		return m
	}
	m.PriceStep, m.MinPrice, m.MaxPrice = "0.000000001", "0.000000001", "0.000001"
	m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1000", "21000", "1000000"
	return m
}

// envelope wraps any command; command ids count up so each is new.
func (h *harness) envelope(cmd any) topics.Envelope {
	h.t.Helper()
	h.seq++
	at := time.UnixMilli(testTimeStart + int64(h.seq))
	var env topics.Envelope
	var err error
	switch c := cmd.(type) {
	case topics.MarketOpen:
		env, err = c.Envelope(at)
	case topics.ClockTick:
		env, err = c.Envelope(at)
	case topics.OrderPlace:
		env, err = topics.OrderCommandEnvelope(topics.TypeOrderPlace, fmt.Sprintf("cmd-%d", h.seq), at, c)
	case topics.OrderCancel:
		env, err = topics.OrderCommandEnvelope(topics.TypeOrderCancel, fmt.Sprintf("cmd-%d", h.seq), at, c)
	case topics.OrderCancelBatch:
		env, err = topics.OrderCommandEnvelope(topics.TypeOrderCancelBatch, fmt.Sprintf("cmd-%d", h.seq), at, c)
	case topics.OrderCancelAll:
		env, err = topics.OrderCommandEnvelope(topics.TypeOrderCancelAll, fmt.Sprintf("cmd-%d", h.seq), at, c)
	default:
		h.t.Fatalf("no envelope for %T", cmd)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return env
}

func (h *harness) apply(cmd any) []Output {
	h.t.Helper()
	return h.applyEnvelope(h.envelope(cmd))
}

func (h *harness) applyEnvelope(env topics.Envelope) []Output {
	h.t.Helper()
	outs, err := h.e.Apply(env)
	if err != nil {
		h.t.Fatal(err)
	}
	outs = append([]Output(nil), outs...)
	checkFilledEvents(h.t, outs)
	return outs
}

// checkFilledEvents holds every order.filled event to the fill before it:
// the same trade, price and quantity, the fee of the order's side and the
// preconf gas of a whole-block fill.
func checkFilledEvents(t *testing.T, outs []Output) {
	t.Helper()
	var fill topics.Fill
	for _, o := range outs {
		switch o.Envelope.Type {
		case topics.TypeTradeExecuted:
			mustData(t, o.Envelope, &fill)
		case topics.TypeOrderFilled:
			var ev topics.OrderEvent
			mustData(t, o.Envelope, &ev)
			fee := fill.SellerFee
			if ev.Side {
				fee = fill.BuyerFee
			}
			if ev.TradeID != fill.TradeID || ev.LastPrice != fill.Price || ev.LastQuantity != fill.Quantity ||
				ev.LastFee != fee || ev.LastPreconfQuantity != fill.PreconfQuantity {
				t.Fatalf("order.filled %+v does not match its fill %+v", ev, fill)
			}
		}
	}
}

// run applies commands and returns the rendering of the last one's output.
func (h *harness) run(cmds ...any) string {
	h.t.Helper()
	var last []Output
	for _, c := range cmds {
		last = h.apply(c)
	}
	return render(h.t, last)
}

// render turns outputs into one line each:
//
//	accepted #5 st=1 fil=0
//	rejected #5 code=115
//	fill #3<-#5 0.5x1 primary pre=1000000 avail=0 fees=0.0005/0.001
//	status ETH-WB-100 2 avail=10
//	cancel_rejected #9 code=108
func render(t *testing.T, outs []Output) string {
	t.Helper()
	var lines []string
	for _, o := range outs {
		lines = append(lines, renderOne(t, o))
	}
	return strings.Join(lines, "\n")
}

func renderOne(t *testing.T, o Output) string {
	t.Helper()
	env := o.Envelope
	switch env.Type {
	case topics.TypeTradeExecuted:
		var f topics.Fill
		mustData(t, env, &f)
		kind := "secondary"
		if f.PrimarySale {
			kind = "primary"
		}
		s := fmt.Sprintf("fill #%d<-#%d %sx%s %s avail=%d fees=%s/%s", f.MakerOrderID, f.TakerOrderID, f.Price, f.Quantity, kind, f.AvailablePreconf, f.BuyerFee, f.SellerFee)
		if f.PreconfQuantity != "" {
			s += " pre=" + f.PreconfQuantity
		}
		return s
	case topics.TypeMarketStatus:
		var m topics.MarketStatus
		mustData(t, env, &m)
		return fmt.Sprintf("status %s %d avail=%d", m.InstrumentID, m.Status, m.AvailablePreconf)
	case topics.TypeCancelRejected:
		var c topics.CancelRejected
		mustData(t, env, &c)
		if c.OrderID == 0 {
			return fmt.Sprintf("cancel_rejected %q code=%d", c.ClientOrderID, c.Code)
		}
		return fmt.Sprintf("cancel_rejected #%d code=%d", c.OrderID, c.Code)
	}
	var ev topics.OrderEvent
	mustData(t, env, &ev)
	name := strings.TrimPrefix(env.Type, "order.")
	if ev.ErrorCode != nil {
		s := fmt.Sprintf("%s #%d st=%d fil=%s code=%d", name, ev.OrderID, ev.Status, ev.Fulfilled, *ev.ErrorCode)
		if ev.Reason != "" {
			s += " " + ev.Reason
		}
		return s
	}
	return fmt.Sprintf("%s #%d st=%d fil=%s", name, ev.OrderID, ev.Status, ev.Fulfilled)
}

func mustData(t *testing.T, env topics.Envelope, v any) {
	t.Helper()
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatal(err)
	}
}

// Order builders: limit buy and sell, then variations.
func buy(id, account int64, instrument, qty, price string) topics.OrderPlace {
	return topics.OrderPlace{OrderID: id, UserID: userOf(account), AccountID: account, InstrumentID: instrument,
		Side: true, OrderType: topics.OrderTypeLimit, Quantity: qty, Price: price}
}

func sell(id, account int64, instrument, qty, price string) topics.OrderPlace {
	o := buy(id, account, instrument, qty, price)
	o.Side = false
	return o
}

func marketOrder(o topics.OrderPlace) topics.OrderPlace {
	o.OrderType = topics.OrderTypeMarket
	return o
}
func fok(o topics.OrderPlace) topics.OrderPlace { o.OrderType = topics.OrderTypeFillOrKill; return o }
func passive(o topics.OrderPlace) topics.OrderPlace {
	o.Passive = true
	return o
}
func client(o topics.OrderPlace, id string) topics.OrderPlace { o.ClientOrderID = id; return o }

func tick(kind topics.TickKind) topics.ClockTick { return topics.ClockTick{Slot: testSlot, Kind: kind} }
