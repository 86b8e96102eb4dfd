package markets

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"blockspace.exchange/topics"
)

// Fields of the WholeBlockMarket and InclusionPreconfMarket resources, in
// the order of their schemas in platform/api/openapi.yaml.
var (
	wholeBlockFields = []string{"marketId", "slot", "instrumentId", "name", "priceStep", "minPrice", "maxPrice",
		"availablePreconf", "direction", "price", "midPrice", "status", "maturityTime", "trxSubmitTime", "blockTime",
		"finalityTime", "updateDate"}
	preconfFields = []string{"marketId", "slot", "instrumentId", "name", "quantityStep", "minQuantity", "maxQuantity",
		"priceStep", "minPrice", "maxPrice", "bestBid", "collateralPerSlot", "totalPreconf", "availablePreconf",
		"direction", "price", "midPrice", "status", "maturityTime", "trxSubmitTime", "blockTime", "finalityTime",
		"totalGas", "validatorType", "updateDate"}
)

func env(t *testing.T, typ, id string, at int64, payload any) topics.Envelope {
	t.Helper()
	e, err := topics.NewEnvelope(typ, 1, id, time.UnixMilli(at), payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func open(slot uint64, f topics.Family) topics.MarketOpen {
	m := topics.MarketOpen{Slot: slot, Family: f, PriceStep: "0.0001", MinPrice: "0.0001", MaxPrice: "100",
		SellerUserID: 1, SellerAccountID: 2, TotalGas: 36_000_000, TotalPreconf: 18_000_000,
		CollateralPerSlot: "1.5", ValidatorType: 1,
		MaturityTime: 996, TrxSubmitTime: 998, BlockTime: 1000, FinalityTime: 1768}
	if f == topics.InclusionPreconf {
		m.PriceStep, m.MinPrice, m.MaxPrice = "0.000000001", "0.000000001", "0.000001"
		m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1000", "21000", "18000000"
	}
	return m
}

func order(id int64, buy bool, price, qty, done string, status int) topics.OrderEvent {
	return topics.OrderEvent{OrderID: id, InstrumentID: "ETH-PC-7", Slot: 7, Side: buy, OrderType: 2,
		Price: price, Quantity: qty, Fulfilled: done, Status: status}
}

func TestReadsCarryEveryFieldOfTheInterface(t *testing.T) {
	m := NewModel()
	apply := func(e topics.Envelope) {
		t.Helper()
		if err := m.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		o := open(7, f)
		apply(env(t, topics.TypeMarketOpen, o.ID(), 10, o))
		apply(env(t, topics.TypeMarketStatus, "oe:7:"+string(f), 11, topics.MarketStatus{
			InstrumentID: topics.InstrumentID(f, 7), Slot: 7, Status: 1, AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000}))
	}
	apply(env(t, topics.TypeOrderAccepted, "oe:7:1", 20, order(1, true, "0.00000002", "21000", "0", 1)))
	apply(env(t, topics.TypeOrderAccepted, "oe:7:2", 21, order(2, true, "0.00000003", "21000", "0", 1)))
	apply(env(t, topics.TypeOrderAccepted, "oe:7:3", 22, order(3, false, "0.00000005", "30000", "0", 1)))
	apply(env(t, topics.TypeOrderAccepted, "oe:7:4", 23, order(4, false, "0.00000004", "21000", "0", 0)))
	apply(env(t, topics.TypeTradeExecuted, "fill:1", 23, topics.Fill{InstrumentID: "ETH-PC-7", Slot: 7, Price: "0.00000003",
		Quantity: "21000", Side: false, AvailablePreconf: 17_979_000}))
	apply(env(t, topics.TypeOrderFilled, "oe:7:5", 23, order(2, true, "0.00000003", "21000", "21000", 10)))
	apply(env(t, topics.TypeOrderCancelled, "oe:7:6", 24, order(4, false, "0.00000004", "21000", "21000", 10)))

	pc, ok := m.PreconfMarket(7)
	if !ok {
		t.Fatal("no preconf market for slot 7")
	}
	checkFields(t, pc, preconfFields, map[string]any{
		"marketId": 1_000_000_000_007.0, "slot": 7.0, "instrumentId": "ETH-PC-7", "name": "ETH-PC-7",
		"quantityStep": "1000", "minQuantity": "21000", "maxQuantity": "18000000",
		"priceStep": "0.000000001", "minPrice": "0.000000001", "maxPrice": "0.000001",
		"bestBid": "0.00000002", "collateralPerSlot": "1.5", "totalPreconf": 18e6, "availablePreconf": 17_979_000.0,
		"direction": false, "price": "0.00000003", "midPrice": "0.000000035", "status": 1.0,
		"maturityTime": 996.0, "trxSubmitTime": 998.0, "blockTime": 1000.0, "finalityTime": 1768.0,
		"totalGas": 36e6, "validatorType": 1.0, "updateDate": 24.0,
	})
	wb := m.WholeBlockMarkets()
	if len(wb) != 1 {
		t.Fatalf("%d whole-block markets", len(wb))
	}
	checkFields(t, wb[0], wholeBlockFields, map[string]any{
		"marketId": 2_000_000_000_007.0, "slot": 7.0, "instrumentId": "ETH-WB-7", "name": "ETH-WB-7",
		"priceStep": "0.0001", "minPrice": "0.0001", "maxPrice": "100", "availablePreconf": 17_979_000.0,
		"direction": nil, "price": nil, "midPrice": nil, "status": 1.0,
		"maturityTime": 996.0, "trxSubmitTime": 998.0, "blockTime": 1000.0, "finalityTime": 1768.0, "updateDate": 11.0,
	})

	// Trading closes: the book empties, the market stays listed with status 2.
	for i, st := range []int{2, 3} {
		apply(env(t, topics.TypeMarketStatus, "oe:7:s"+string(rune('a'+i)), int64(30+i), topics.MarketStatus{
			InstrumentID: "ETH-PC-7", Slot: 7, Status: st, AvailablePreconf: 17_979_000, TotalPreconf: 18_000_000}))
		if pcs := m.PreconfMarkets(); len(pcs) != 1 || pcs[0].Status != st || pcs[0].BestBid != nil {
			t.Fatalf("after status %d: %+v", st, pcs)
		}
	}
	apply(env(t, topics.TypeMarketStatus, "oe:7:f", 40, topics.MarketStatus{InstrumentID: "ETH-PC-7", Slot: 7, Status: 4}))
	if pcs := m.PreconfMarkets(); len(pcs) != 0 {
		t.Fatalf("finalized market still listed: %+v", pcs)
	}
	if pc, ok := m.PreconfMarket(7); !ok || pc.Status != 4 {
		t.Fatalf("finalized market by slot: %+v %v", pc, ok)
	}
	if _, ok := m.PreconfMarket(8); ok {
		t.Fatal("slot 8 has a market")
	}
}

// A market.open the matcher refused (no market.status) is not shown.
func TestMarketWithoutStatusIsHidden(t *testing.T) {
	m := NewModel()
	o := open(9, topics.InclusionPreconf)
	if err := m.Apply(env(t, topics.TypeMarketOpen, o.ID(), 1, o)); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.PreconfMarket(9); ok || len(m.PreconfMarkets()) != 0 {
		t.Fatal("market shown before the matcher opened it")
	}
}

func checkFields(t *testing.T, v any, fields []string, want map[string]any) {
	t.Helper()
	b, _ := json.Marshal(v)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wantKeys := append([]string(nil), fields...)
	sort.Strings(wantKeys)
	if len(keys) != len(wantKeys) {
		t.Fatalf("fields %v, want %v", keys, wantKeys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] {
			t.Fatalf("fields %v, want %v", keys, wantKeys)
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}

// The matcher reports a change of availablePreconf that no fill carries
// (the holder's resting preconf sell) with a market.status at the same
// status: both markets of the slot show the new value and stay listed.
func TestStatusAtTheSameStatusMovesAvailablePreconf(t *testing.T) {
	m := NewModel()
	for i, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		o := open(7, f)
		for _, e := range []topics.Envelope{
			env(t, topics.TypeMarketOpen, o.ID(), 10, o),
			env(t, topics.TypeMarketStatus, "oe:7:"+string(rune('1'+i)), 11, topics.MarketStatus{
				InstrumentID: topics.InstrumentID(f, 7), Slot: 7, Status: 1, AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000}),
		} {
			if err := m.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.Apply(env(t, topics.TypeMarketStatus, "oe:7:4", 20, topics.MarketStatus{
		InstrumentID: "ETH-PC-7", Slot: 7, Status: 1, AvailablePreconf: 17_900_000, TotalPreconf: 18_000_000})); err != nil {
		t.Fatal(err)
	}
	wb, pc := m.WholeBlockMarkets(), m.PreconfMarkets()
	if len(wb) != 1 || len(pc) != 1 || wb[0].AvailablePreconf != 17_900_000 || pc[0].AvailablePreconf != 17_900_000 ||
		wb[0].Status != 1 || pc[0].Status != 1 {
		t.Fatalf("whole block %+v, preconf %+v: want both open with availablePreconf 17900000", wb, pc)
	}
}
