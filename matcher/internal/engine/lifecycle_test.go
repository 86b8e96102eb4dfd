package engine

import (
	"strings"
	"testing"

	"blockspace.exchange/topics"
)

func TestDuplicateCommandsAreNoOps(t *testing.T) {
	h := newHarness(t)
	place := h.envelope(buy(1, alice, inclusionID, "21000", gwei2))
	if got := render(t, h.applyEnvelope(place)); got != "accepted #1 st=1 fil=0" {
		t.Fatalf("first place: %s", got)
	}
	if outs := h.applyEnvelope(place); len(outs) != 0 {
		t.Fatalf("republished place produced %s", render(t, outs))
	}
	// The same order id under another command id was decided already.
	if outs := h.apply(sell(1, seller, inclusionID, "100000", gwei2)); len(outs) != 0 {
		t.Fatalf("second command for order 1 produced %s", render(t, outs))
	}
	cancel := h.envelope(topics.OrderCancel{UserID: userOf(alice), AccountID: alice, InstrumentID: inclusionID, OrderID: 1})
	h.applyEnvelope(cancel)
	if outs := h.applyEnvelope(cancel); len(outs) != 0 {
		t.Fatalf("republished cancel produced %s", render(t, outs))
	}
	open := h.envelope(marketOpen(testSlot, topics.WholeBlock))
	if outs := h.applyEnvelope(open); len(outs) != 0 {
		t.Fatalf("second market.open produced %s", render(t, outs))
	}
}

func TestMarketOpenIssuesTheSlotOnce(t *testing.T) {
	h := &harness{t: t, e: New()}
	if got := h.run(marketOpen(testSlot, topics.InclusionPreconf)); got != "status ETH-PC-100 1 avail=1000000" {
		t.Fatalf("open inclusion-preconf: %s", got)
	}
	// Whole-block opens later; the seller is not credited twice.
	if got := h.run(marketOpen(testSlot, topics.WholeBlock)); got != "status ETH-WB-100 1 avail=1000000" {
		t.Fatalf("open whole-block: %s", got)
	}
	if got := h.run(sell(1, seller, inclusionID, "1000000", gwei2), sell(2, seller, inclusionID, "21000", gwei2)); got != "rejected #2 st=99 fil=0 code=125" {
		t.Fatalf("seller sold more than the slot's preconf: %s", got)
	}
}

func TestMarketOpenRejectsBadParameters(t *testing.T) {
	bad := map[string]func(*topics.MarketOpen){
		"zero price step":      func(m *topics.MarketOpen) { m.PriceStep = "0" },
		"min price off step":   func(m *topics.MarketOpen) { m.MinPrice = "0.0000000015" },
		"empty price range":    func(m *topics.MarketOpen) { m.MaxPrice = "0" },
		"fractional qty step":  func(m *topics.MarketOpen) { m.QuantityStep = "0.5" },
		"max below min qty":    func(m *topics.MarketOpen) { m.MaxQuantity = "1000" },
		"fee rate of one":      func(m *topics.MarketOpen) { m.BuyFeeRate = "1" },
		"no seller":            func(m *topics.MarketOpen) { m.SellerAccountID = 0 },
		"negative preconf":     func(m *topics.MarketOpen) { m.TotalPreconf = -1 },
		"price range overflow": func(m *topics.MarketOpen) { m.MaxPrice = "100000000000" },
	}
	for name, mutate := range bad {
		h := &harness{t: t, e: New()}
		m := marketOpen(testSlot, topics.InclusionPreconf)
		mutate(&m)
		if outs, err := h.e.Apply(h.envelope(m)); err == nil || len(outs) != 0 {
			t.Errorf("%s: opened with %v, %d outputs", name, err, len(outs))
		}
		if got := h.run(buy(1, alice, inclusionID, "21000", gwei2)); !strings.HasSuffix(got, "code=114") {
			t.Errorf("%s: market took an order: %s", name, got)
		}
	}
}

func TestFinalizedSlotsKeepCommandIDsUntilEvicted(t *testing.T) {
	h := newHarness(t)
	place := h.envelope(buy(1, alice, wholeBlockID, "1", "1"))
	h.applyEnvelope(place)
	h.run(tick(topics.TickTradingClosed), tick(topics.TickSubmissionClosed))
	if got := h.run(tick(topics.TickFinalized)); got != "status ETH-WB-100 4 avail=1000000\nstatus ETH-PC-100 4 avail=1000000" {
		t.Fatalf("finalize: %s", got)
	}
	if outs := h.applyEnvelope(place); len(outs) != 0 {
		t.Fatalf("late duplicate after finalizing produced %s", render(t, outs))
	}
	if got := h.run(buy(2, alice, wholeBlockID, "1", "1")); got != "rejected #2 st=99 fil=0 code=114" {
		t.Fatalf("new order after finalizing: %s", got)
	}
	// A slot finalized RetainSlots later evicts it.
	later := uint64(testSlot + RetainSlots + 1)
	h.apply(marketOpen(later, topics.WholeBlock))
	h.apply(topics.ClockTick{Slot: later, Kind: topics.TickFinalized})
	if _, ok := h.e.slots[testSlot]; ok {
		t.Fatal("slot still held after eviction")
	}
	outs := h.applyEnvelope(place)
	if got := render(t, outs); got != "rejected #1 st=99 fil=0 code=114" {
		t.Fatalf("command for an evicted slot: %s", got)
	}
	if !strings.HasPrefix(outs[0].Envelope.ID, "oe:100:c") {
		t.Fatalf("answer about an evicted slot reuses a slot-counted id: %s", outs[0].Envelope.ID)
	}
}

func TestUndecodableInputIsAnErrorWithoutOutput(t *testing.T) {
	h := newHarness(t)
	bad := []topics.Envelope{
		{Type: topics.TypeOrderPlace, Version: 1, ID: "x1", Data: []byte(`{"orderId":"one"}`)},
		{Type: topics.TypeOrderPlace, Version: 1, ID: "x2", Data: []byte(`{"orderId":1,"instrumentId":"ETH-XX-1"}`)},
		{Type: topics.TypeOrderCancel, Version: 2, ID: "x3", Data: []byte(`{}`)},
		{Type: topics.TypeClockTick, Version: 1, ID: "x4", Data: []byte(`{"slot":100,"kind":"noon"}`)},
	}
	for _, env := range bad {
		if outs, err := h.e.Apply(env); err == nil || len(outs) != 0 {
			t.Errorf("%s: err %v, %d outputs", env.ID, err, len(outs))
		}
	}
	ignored := topics.Envelope{Type: topics.TypeSlotProposer, Version: 1, ID: "x5", Data: []byte(`{}`)}
	if outs, err := h.e.Apply(ignored); err != nil || len(outs) != 0 {
		t.Errorf("slot.proposer: %v, %d outputs", err, len(outs))
	}
}
