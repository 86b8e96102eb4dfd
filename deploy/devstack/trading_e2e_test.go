package devstack

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/settler"
	"blockspace.exchange/topics"
)

// The regular user class's fee rates (reference data, migration 0001),
// fractions of trade value.
var (
	buyFeeRate           = decimal.RequireFromString("0.001")
	primarySellFeeRate   = decimal.RequireFromString("0.02")
	secondarySellFeeRate = decimal.RequireFromString("0.005")
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// TestTradingEndToEnd trades one slot through the REST base of the real
// stack, from a validator's registration to the expiry of its markets, on
// 1 s slots: the validator's user sells the whole block (a primary sale),
// a buyer funded through a deposit on the dev chain and a transfer buys
// it with the slot's preconf gas and resells part of the gas to a second
// trader in the inclusion-preconf market (a secondary sale); orders are
// cancelled singly, in a batch and all at once; the markets close and
// the orders still open expire. Balances, positions, orders, account
// transactions and the fee account match amounts computed here from the
// fee rates, and the ledger audit, quiescent checks included, is clean.
func TestTradingEndToEnd(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "1s", "DEMO_VALIDATOR": "false"})
	c := client{t: t, base: s.Addresses().REST}
	env := s.cfg.Environment
	fees := call(t, "GET", c.base+"/api/v1/p/user/fees")
	if want := fmt.Sprintf(`{"buyFeeRate":"%s","primarySellFeeRate":"%s","secondarySellFeeRate":"%s"}`,
		buyFeeRate, primarySellFeeRate, secondarySellFeeRate); string(fees.body.Data) != want {
		t.Fatalf("fee rates %s, the test computes with %s", fees.body.Data, want)
	}
	if m := markets(t, c.base+"/api/v1/p/wholeblock/markets"); len(m) != 0 {
		t.Fatalf("markets open before any validator registered: %+v", m)
	}

	// A validator registers; the dev beacon gives it every slot of the
	// epochs it assigns from then on, so markets open. The test trades the
	// first slot whose trading closes at least 25 s (slots) ahead: time
	// enough for what it does before, short enough a wait for the expiry.
	seller := logIn(t, c, newWallet(t))
	registerValidator(t, seller, env.ChainID, "trading end to end validator 0001")
	var slot uint64
	var wbMarket listedMarket
	poll.Until(t, "a whole-block market of the validator with time left", func() bool {
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if time.UnixMilli(m.MaturityTime).After(time.Now().Add(25*time.Second)) && (slot == 0 || m.Slot < slot) {
				slot, wbMarket = m.Slot, m
			}
		}
		return slot != 0
	})
	wb, pc := topics.InstrumentID(topics.WholeBlock, slot), topics.InstrumentID(topics.InclusionPreconf, slot)
	maturity := env.Times(slot).Maturity
	if wbMarket.Status != topics.MarketStatusOpen || wbMarket.MaturityTime != maturity.UnixMilli() || wbMarket.AvailablePreconf != 18_000_000 {
		t.Fatalf("whole-block market %+v, maturity %d", wbMarket, maturity.UnixMilli())
	}
	t.Logf("slot %d: trading closes in %s", slot, time.Until(maturity).Round(time.Millisecond))

	// The buyer and a second trader deposit on the dev chain and move
	// funds to their trading accounts.
	buyer, other := logIn(t, c, newWallet(t)), logIn(t, c, newWallet(t))
	s.deposit(t, 1, buyer.addr, "2")
	s.deposit(t, 2, other.addr, "1")
	buyer.waitBalance("the buyer's deposit credited", buyer.current, "2", "0")
	other.waitBalance("the other trader's deposit credited", other.current, "1", "0")
	buyer.transfer(buyer.current, buyer.preconf, "1.5")
	other.transfer(other.current, other.preconf, "1")

	// The primary sale: the validator's user sells the whole block, the
	// buyer takes it and with it the slot's 18,000,000 units of preconf gas.
	limit := func(tr *trader, instrument string, buy bool, quantity, price string) map[string]any {
		return map[string]any{"accountId": tr.preconf, "instrumentId": instrument, "side": buy, "orderType": 2, "quantity": quantity, "price": price}
	}
	wbPrice := dec("0.5")
	sellBlock := seller.place(limit(seller, wb, false, "1", "0.5"))
	buyBlock := buyer.place(limit(buyer, wb, true, "1", "0.5"))
	seller.waitOrders("the block sold", topics.WholeBlock, map[int64]int{sellBlock: topics.OrderStatusDone})
	buyer.waitOrders("the block bought", topics.WholeBlock, map[int64]int{buyBlock: topics.OrderStatusDone})
	buyerPreconf := dec("1.5").Sub(wbPrice).Sub(wbPrice.Mul(buyFeeRate)) // 0.9995
	sellerPreconf := wbPrice.Sub(wbPrice.Mul(primarySellFeeRate))        // 0.49
	buyer.waitBalance("the buyer paid price and buy fee", buyer.preconf, buyerPreconf.String(), "0")
	seller.waitBalance("the seller paid the primary sell fee", seller.preconf, sellerPreconf.String(), "0")
	checkOwnTrades(t, seller, topics.WholeBlock, []ownTrade{{Price: wbPrice, Quantity: dec("1"), Fee: wbPrice.Mul(primarySellFeeRate), Side: false, Taker: false,
		PreconfQuantity: ptr(dec("18000000"))}})
	checkOwnTrades(t, buyer, topics.WholeBlock, []ownTrade{{Price: wbPrice, Quantity: dec("1"), Fee: wbPrice.Mul(buyFeeRate), Side: true, Taker: true,
		PreconfQuantity: ptr(dec("18000000"))}})

	// Cancels: one order singly, two in a batch (by id and by client id,
	// with an order already cancelled answered 109), two with cancel-all.
	// The bid left rests until trading closes.
	single := other.place(limit(other, wb, true, "1", "0.1"))
	if items := cancelItems(t, other, "cancel-order", map[string]any{"accountId": other.preconf, "instrumentId": wb, "orderId": single}); items != fmt.Sprintf("%d:1", single) {
		t.Fatalf("cancel-order: %s", items)
	}
	other.waitOrders("the single cancel", topics.WholeBlock, map[int64]int{single: topics.OrderStatusCancelledByUser})
	byID := other.place(limit(other, wb, true, "1", "0.2"))
	tagged := limit(other, wb, true, "1", "0.25")
	tagged["clientOrderId"] = "batch-1"
	byClientID := other.place(tagged)
	other.waitBalance("three bids reserved", other.preconf, "1", dec("0.45").Mul(buyFeeRate.Add(dec("1"))).String())
	if items := cancelItems(t, other, "cancel-batch-orders", map[string]any{"accountId": other.preconf, "instrumentId": wb,
		"orderIds": []int64{byID, single}, "clientOrderIds": []string{"batch-1"}}); items != fmt.Sprintf("%d:1 %d:109 %d:1", byID, single, byClientID) {
		t.Fatalf("cancel-batch-orders: %s", items)
	}
	other.waitOrders("the batch cancel", topics.WholeBlock, map[int64]int{byID: topics.OrderStatusCancelledByUser, byClientID: topics.OrderStatusCancelledByUser})
	all1, all2 := other.place(limit(other, wb, true, "1", "0.11")), other.place(limit(other, wb, true, "1", "0.12"))
	var cancelled struct {
		CancelledOrderIDs []int64 `json:"cancelledOrderIds"`
	}
	other.call("POST", "/api/v1/wholeblock/cancel-all-orders", map[string]any{"accountId": other.preconf}, &cancelled)
	if fmt.Sprint(cancelled.CancelledOrderIDs) != fmt.Sprint([]int64{all1, all2}) {
		t.Fatalf("cancel-all-orders cancelled %v, want %d and %d", cancelled.CancelledOrderIDs, all1, all2)
	}
	other.waitOrders("the cancel-all", topics.WholeBlock, map[int64]int{all1: topics.OrderStatusCancelledByUser, all2: topics.OrderStatusCancelledByUser})
	expiringBid := other.place(limit(other, wb, true, "1", "0.05"))
	expiringReserve := dec("0.05").Mul(buyFeeRate.Add(dec("1"))) // 0.05005
	other.waitBalance("only the resting bid reserved", other.preconf, "1", expiringReserve.String())

	// The secondary sale: once the slot's inclusion-preconf market opens
	// the buyer offers 3,000,000 gas; 1,000,000 trade against the second
	// trader's bid, at the bid's price, and the rest stays on the book.
	poll.Before(t, "the slot's inclusion-preconf market", maturity, func() bool {
		return preconfMarket(t, c, slot).Status == topics.MarketStatusOpen
	}, nil)
	pcPrice, pcSold := dec("0.00000002"), dec("1000000")
	pcValue := pcPrice.Mul(pcSold) // 0.02
	bid := other.place(limit(other, pc, true, "1000000", "0.00000002"))
	offer := buyer.place(limit(buyer, pc, false, "3000000", "0.00000002"))
	other.waitOrders("the gas bought", topics.InclusionPreconf, map[int64]int{bid: topics.OrderStatusDone})
	buyer.waitOrders("the gas partly sold", topics.InclusionPreconf, map[int64]int{offer: topics.OrderStatusPartiallyFilled})
	buyerPreconf = buyerPreconf.Add(pcValue).Sub(pcValue.Mul(secondarySellFeeRate)) // 1.0194
	otherPreconf := dec("1").Sub(pcValue).Sub(pcValue.Mul(buyFeeRate))              // 0.97998
	buyer.waitBalance("the buyer paid the secondary sell fee", buyer.preconf, buyerPreconf.String(), "0")
	other.waitBalance("the second trader paid price and buy fee", other.preconf, otherPreconf.String(), expiringReserve.String())
	checkOwnTrades(t, buyer, topics.InclusionPreconf, []ownTrade{{Price: pcPrice, Quantity: pcSold, Fee: pcValue.Mul(secondarySellFeeRate), Side: false, Taker: true}})
	checkOwnTrades(t, other, topics.InclusionPreconf, []ownTrade{{Price: pcPrice, Quantity: pcSold, Fee: pcValue.Mul(buyFeeRate), Side: true, Taker: false}})
	// The block now includes what its holder neither sold nor offers.
	poll.Until(t, "the whole block's available preconf gas after the sale", func() bool {
		return wholeBlockMarket(t, c, slot).AvailablePreconf == 15_000_000
	})
	checkPositions(t, c, pc, []position{{Quantity: dec("17000000"), Locked: dec("2000000")}, {Quantity: pcSold, AveragePrice: &pcPrice}})
	if left := time.Until(maturity); left <= 0 {
		t.Fatalf("trading of slot %d closed before the test placed its orders; the machine is too slow for 1 s slots", slot)
	} else {
		t.Logf("slot %d: the trades settled %s before trading closes", slot, left.Round(time.Millisecond))
	}

	// Trading closes: both markets report it and the open orders expire,
	// the offer with its filled part kept, the bid's reservation unlocked.
	poll.Before(t, "trading of the slot closed", maturity.Add(60*time.Second), func() bool {
		return preconfMarket(t, c, slot).Status >= topics.MarketStatusTradingClosed
	}, nil)
	other.waitOrders("the resting bid expired", topics.WholeBlock, map[int64]int{expiringBid: topics.OrderStatusExpired})
	buyer.waitOrders("the rest of the offer expired", topics.InclusionPreconf, map[int64]int{offer: topics.OrderStatusExpired})
	other.waitBalance("the expired bid's reservation unlocked", other.preconf, otherPreconf.String(), "0")
	poll.Until(t, "the whole block's available preconf gas after the expiry", func() bool {
		m := wholeBlockMarket(t, c, slot)
		return m.Status >= topics.MarketStatusTradingClosed && m.AvailablePreconf == 17_000_000
	})

	// Balances.
	for _, b := range []struct {
		who      string
		tr       *trader
		account  int64
		quantity decimal.Decimal
	}{
		{"seller current", seller, seller.current, decimal.Zero},
		{"seller trading", seller, seller.preconf, sellerPreconf},
		{"buyer current", buyer, buyer.current, dec("0.5")},
		{"buyer trading", buyer, buyer.preconf, buyerPreconf},
		{"other current", other, other.current, decimal.Zero},
		{"other trading", other, other.preconf, otherPreconf},
	} {
		if got := b.tr.balance(b.account); !got.Quantity.Equal(b.quantity) || !got.LockedQuantity.IsZero() {
			t.Errorf("%s holds %s, locked %s; want %s, none locked", b.who, got.Quantity, got.LockedQuantity, b.quantity)
		}
	}
	feesEarned := wbPrice.Mul(buyFeeRate.Add(primarySellFeeRate)).Add(pcValue.Mul(buyFeeRate.Add(secondarySellFeeRate))) // 0.01062
	for typ, want := range map[int]decimal.Decimal{101: dec("-3"), 102: feesEarned} {
		var got decimal.Decimal
		if err := s.pool.QueryRow(t.Context(), `SELECT b.quantity FROM account_balances b JOIN accounts a USING (account_id)
			WHERE a.user_id IS NULL AND a.type = $1 AND b.token_id = 1`, typ).Scan(&got); err != nil || !got.Equal(want) {
			t.Errorf("system account %d holds %s (%v), want %s", typ, got, err, want)
		}
	}

	// Positions: the buyer holds the block and the gas it kept, the second
	// trader the gas it bought; the seller holds nothing.
	checkPositions(t, c, wb, []position{{Quantity: dec("1"), AveragePrice: &wbPrice, Expired: true}})
	checkPositions(t, c, pc, []position{{Quantity: dec("17000000"), Expired: true}, {Quantity: pcSold, AveragePrice: &pcPrice, Expired: true}})

	// Orders as each trader reads them.
	none, cancelCode := 0, topics.CodeManuallyCancelled
	checkOrders(t, seller, topics.WholeBlock, map[int64]orderState{sellBlock: {topics.OrderStatusDone, dec("1"), wbPrice.Mul(primarySellFeeRate), none}})
	checkOrders(t, buyer, topics.WholeBlock, map[int64]orderState{buyBlock: {topics.OrderStatusDone, dec("1"), wbPrice.Mul(buyFeeRate), none}})
	checkOrders(t, buyer, topics.InclusionPreconf, map[int64]orderState{offer: {topics.OrderStatusExpired, pcSold, pcValue.Mul(secondarySellFeeRate), none}})
	checkOrders(t, other, topics.WholeBlock, map[int64]orderState{
		single: {topics.OrderStatusCancelledByUser, decimal.Zero, decimal.Zero, cancelCode}, byID: {topics.OrderStatusCancelledByUser, decimal.Zero, decimal.Zero, cancelCode},
		byClientID: {topics.OrderStatusCancelledByUser, decimal.Zero, decimal.Zero, cancelCode}, all1: {topics.OrderStatusCancelledByUser, decimal.Zero, decimal.Zero, cancelCode},
		all2: {topics.OrderStatusCancelledByUser, decimal.Zero, decimal.Zero, cancelCode}, expiringBid: {topics.OrderStatusExpired, decimal.Zero, decimal.Zero, none},
	})
	checkOrders(t, other, topics.InclusionPreconf, map[int64]orderState{bid: {topics.OrderStatusDone, pcSold, pcValue.Mul(buyFeeRate), none}})

	// Account transactions, newest first, with running balances.
	checkTxs(t, seller, []accountTx{
		{AccountID: seller.preconf, Type: 15, Quantity: wbPrice.Mul(primarySellFeeRate).Neg(), Balance: sellerPreconf},
		{AccountID: seller.preconf, Type: 2, Quantity: wbPrice, Balance: wbPrice},
	})
	checkTxs(t, buyer, []accountTx{
		{AccountID: buyer.preconf, Type: 15, Quantity: dec("-0.0001"), Balance: dec("1.0194")},
		{AccountID: buyer.preconf, Type: 2, Quantity: dec("0.02"), Balance: dec("1.0195")},
		{AccountID: buyer.preconf, Type: 15, Quantity: dec("-0.0005"), Balance: dec("0.9995")},
		{AccountID: buyer.preconf, Type: 1, Quantity: dec("-0.5"), Balance: dec("1")},
		{AccountID: buyer.preconf, Type: 6, Quantity: dec("1.5"), Balance: dec("1.5")},
		{AccountID: buyer.current, Type: 7, Quantity: dec("-1.5"), Balance: dec("0.5")},
		{AccountID: buyer.current, Type: 8, Quantity: dec("2"), Balance: dec("2")},
	})
	checkTxs(t, other, []accountTx{
		{AccountID: other.preconf, Type: 15, Quantity: dec("-0.00002"), Balance: dec("0.97998")},
		{AccountID: other.preconf, Type: 1, Quantity: dec("-0.02"), Balance: dec("0.98")},
		{AccountID: other.preconf, Type: 6, Quantity: dec("1"), Balance: dec("1")},
		{AccountID: other.current, Type: 7, Quantity: dec("-1"), Balance: dec("0")},
		{AccountID: other.current, Type: 8, Quantity: dec("1"), Balance: dec("1")},
	})

	v, err := settler.AuditQuiescent(t.Context(), s.pool, 10)
	if err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}

func ptr[T any](v T) *T { return &v }

// registerValidator registers the validator of the BLS key of seed for
// the trader through REST, as deploy/cmd/devvalidator does: verify/batch
// first finds the signature good, register stores it, and a second
// verify/batch finds it registered.
func registerValidator(t *testing.T, tr *trader, chainID int64, seed string) {
	t.Helper()
	pubkey, sig, err := devkit.SignValidatorRegistration([]byte(seed), chainID, tr.addr)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Pubkey         string `json:"pubkey"`
		Result         int    `json:"result"`
		ValidatorIndex *int64 `json:"validatorIndex"`
	}
	body := []map[string]string{{"pubkey": pubkey, "signature": sig}}
	for _, step := range []struct {
		path string
		want int
	}{{"verify/batch", 0}, {"register", 0}, {"verify/batch", 3}} {
		var d struct{ Results []result }
		tr.call("POST", "/api/v1/validator/"+step.path, body, &d)
		if len(d.Results) != 1 || d.Results[0].Pubkey != pubkey || d.Results[0].Result != step.want ||
			(step.want == 0) != (d.Results[0].ValidatorIndex != nil) {
			t.Fatalf("%s: %+v, want result %d", step.path, d.Results, step.want)
		}
	}
}

// cancelItems sends a cancel and returns its items as "orderId:code ...".
func cancelItems(t *testing.T, tr *trader, route string, body map[string]any) string {
	t.Helper()
	var d struct {
		Items []struct {
			OrderID *int64 `json:"orderId"`
			Code    int    `json:"code"`
		}
	}
	tr.call("POST", "/api/v1/"+string(family(t, body["instrumentId"].(string)))+"/"+route, body, &d)
	out := ""
	for i, it := range d.Items {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%d:%d", *it.OrderID, it.Code)
	}
	return out
}

func decodeData(t *testing.T, r reply, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body.Data, v); err != nil || r.status != 200 || !r.body.Success {
		t.Fatalf("answer %d %+v: %v", r.status, r.body, err)
	}
}

func preconfMarket(t *testing.T, c client, slot uint64) listedMarket {
	t.Helper()
	var d struct{ Market listedMarket }
	r := call(t, "GET", fmt.Sprintf("%s/api/v1/p/inclusion-preconf/market?slot=%d", c.base, slot))
	if r.status != 200 {
		t.Fatalf("preconf market %d: %d %+v", slot, r.status, r.body)
	}
	if r.body.Success {
		decodeData(t, r, &d)
	}
	return d.Market
}

// wholeBlockMarket is the slot's whole-block market from the list (which
// holds markets until they are finalized).
func wholeBlockMarket(t *testing.T, c client, slot uint64) listedMarket {
	t.Helper()
	for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
		if m.Slot == slot {
			return m
		}
	}
	t.Fatalf("whole-block market %d is not listed", slot)
	return listedMarket{}
}

type ownTrade struct {
	Price           decimal.Decimal  `json:"price"`
	Quantity        decimal.Decimal  `json:"quantity"`
	PreconfQuantity *decimal.Decimal `json:"preconfQuantity"`
	Fee             decimal.Decimal  `json:"fee"`
	Side            bool             `json:"side"`
	Taker           bool             `json:"taker"`
}

func (a ownTrade) String() string {
	pre := "-"
	if a.PreconfQuantity != nil {
		pre = a.PreconfQuantity.String()
	}
	return fmt.Sprintf("{%s × %s (gas %s) fee %s buy %t taker %t}", a.Quantity, a.Price, pre, a.Fee, a.Side, a.Taker)
}

// checkOwnTrades compares the trader's trades of a family, newest first.
func checkOwnTrades(t *testing.T, tr *trader, fam topics.Family, want []ownTrade) {
	t.Helper()
	var d struct{ Trades []ownTrade }
	tr.call("GET", "/api/v1/user/"+string(fam)+"/trades", nil, &d)
	if fmt.Sprint(d.Trades) != fmt.Sprint(want) {
		t.Errorf("%s trades of user %d:\n got %v\nwant %v", fam, tr.user, d.Trades, want)
	}
}

type position struct {
	Quantity     decimal.Decimal  `json:"quantity"`
	Locked       decimal.Decimal  `json:"locked"`
	AveragePrice *decimal.Decimal `json:"averagePrice"`
	Expired      bool             `json:"expired"`
}

func (p position) String() string {
	avg := "null"
	if p.AveragePrice != nil {
		avg = p.AveragePrice.String()
	}
	return fmt.Sprintf("{%s locked %s avg %s expired %t}", p.Quantity, p.Locked, avg, p.Expired)
}

// checkPositions compares the public positions of an instrument, largest
// first.
func checkPositions(t *testing.T, c client, instrument string, want []position) {
	t.Helper()
	var d struct{ Positions []position }
	r := call(t, "GET", fmt.Sprintf("%s/api/v1/p/%s/positions?instrumentId=%s", c.base, family(t, instrument), instrument))
	decodeData(t, r, &d)
	if fmt.Sprint(d.Positions) != fmt.Sprint(want) {
		t.Errorf("positions in %s:\n got %v\nwant %v", instrument, d.Positions, want)
	}
}

type orderState struct {
	status          int
	fulfilled, fees decimal.Decimal
	errorCode       int // 0: null
}

func checkOrders(t *testing.T, tr *trader, fam topics.Family, want map[int64]orderState) {
	t.Helper()
	got := tr.orders(fam)
	if len(got) != len(want) {
		t.Errorf("user %d has %d %s orders, want %d", tr.user, len(got), fam, len(want))
	}
	for id, w := range want {
		o, ok := got[id]
		code := 0
		if o.ErrorCode != nil {
			code = *o.ErrorCode
		}
		if !ok || o.Status != w.status || !o.Fulfilled.Equal(w.fulfilled) || !o.Fees.Equal(w.fees) || code != w.errorCode {
			t.Errorf("order %d: %+v (errorCode %d), want %+v", id, o, code, w)
		}
	}
}

// checkTxs compares the trader's account transactions, newest first.
func checkTxs(t *testing.T, tr *trader, want []accountTx) {
	t.Helper()
	got := tr.txs()
	show := func(txs []accountTx) string {
		out := ""
		for _, x := range txs {
			out += fmt.Sprintf("\n  account %d type %d %s → %s", x.AccountID, x.Type, x.Quantity, x.Balance)
		}
		return out
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.AccountID == w.AccountID && g.Type == w.Type && g.Quantity.Equal(w.Quantity) && g.Balance.Equal(w.Balance) &&
			(i == 0 || g.TrxID < got[i-1].TrxID)
	}
	if !ok {
		t.Errorf("account transactions of user %d:%s\nwant:%s", tr.user, show(got), show(want))
	}
}
