package ingress_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

// Slots of the test markets. The default layout of `orders` has 16
// partitions, so slot s is on partition s % 16.
const (
	slotOpen     = 1005 // both families open
	slotOther    = 1006 // whole block open: a second market of the family
	slotClosed   = 1007 // whole block, trading closed by the matcher
	slotMatured  = 1008 // whole block, maturity passed, no status yet
	slotFinished = 1009 // whole block, finalized: forgotten
)

var (
	wbOpen   = topics.InstrumentID(topics.WholeBlock, slotOpen)
	wbOther  = topics.InstrumentID(topics.WholeBlock, slotOther)
	pcOpen   = topics.InstrumentID(topics.InclusionPreconf, slotOpen)
	wbClosed = topics.InstrumentID(topics.WholeBlock, slotClosed)
)

func marketOpen(f topics.Family, slot uint64, maturity time.Time) topics.MarketOpen {
	m := topics.MarketOpen{
		Slot: slot, Family: f, SellerUserID: 1, SellerAccountID: 2, TotalGas: 36_000_000, TotalPreconf: 18_000_000,
		BuyFeeRate: "0.001", PrimarySellFeeRate: "0.02", SecondarySellFeeRate: "0.005", MaturityTime: maturity.UnixMilli(),
		PriceStep: "0.0001", MinPrice: "0.0001", MaxPrice: "100",
	}
	if f == topics.InclusionPreconf {
		m.PriceStep, m.MinPrice, m.MaxPrice = "0.000000001", "0.000000001", "0.000001"
		m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1000", "21000", "18000000"
	}
	return m
}

// produce writes an envelope about slot on its partition of topic.
func (h *harness) produce(topic string, slot uint64, e topics.Envelope) {
	h.t.Helper()
	l, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := kafka.NewSlotRecord(topic, l, slot, e)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.kcl.ProduceSync(h.t.Context(), r).FirstErr(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) openMarket(m topics.MarketOpen) {
	h.t.Helper()
	e, err := m.Envelope(time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	h.produce(topics.Orders, m.Slot, e)
}

func (h *harness) marketStatus(f topics.Family, slot uint64, status int) {
	h.t.Helper()
	st := topics.MarketStatus{CommandID: fmt.Sprintf("tick:%d:%d", slot, status), MarketID: topics.MarketID(f, slot),
		InstrumentID: topics.InstrumentID(f, slot), Slot: slot, Status: status}
	e, err := topics.NewEnvelope(topics.TypeMarketStatus, topics.MatcherEventVersion, fmt.Sprintf("oe:%d:%d", slot, status), time.Now(), st)
	if err != nil {
		h.t.Fatal(err)
	}
	h.produce(topics.OrderEvents, slot, e)
}

// openTestMarkets writes the records of the test markets, for a catalog
// to find in the log at start.
func (h *harness) openTestMarkets() {
	h.t.Helper()
	now := time.Now()
	h.openMarket(marketOpen(topics.WholeBlock, slotOpen, now.Add(time.Hour)))
	h.openMarket(marketOpen(topics.InclusionPreconf, slotOpen, now.Add(time.Hour)))
	h.openMarket(marketOpen(topics.WholeBlock, slotOther, now.Add(time.Hour)))
	h.openMarket(marketOpen(topics.WholeBlock, slotClosed, now.Add(time.Hour)))
	h.openMarket(marketOpen(topics.WholeBlock, slotMatured, now.Add(-time.Minute)))
	h.openMarket(marketOpen(topics.WholeBlock, slotFinished, now.Add(time.Hour)))
	h.marketStatus(topics.WholeBlock, slotOpen, topics.MarketStatusOpen)
	h.marketStatus(topics.WholeBlock, slotClosed, topics.MarketStatusTradingClosed)
	h.marketStatus(topics.WholeBlock, slotFinished, topics.MarketStatusFinalized)
}

// newMarketsHarness starts a service whose catalog finds the test markets
// in the log at start.
func newMarketsHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	before := o.before
	o.before = func(h *harness) {
		h.openTestMarkets()
		if before != nil {
			before(h)
		}
	}
	h := startHarness(t, o)
	h.waitReady()
	return h
}

// waitReady waits until the order routes stop answering 503 (the market
// catalog has caught up with the log).
func (h *harness) waitReady() {
	h.t.Helper()
	u := h.newUser(fmt.Sprintf("0x%040x", time.Now().UnixNano()), "0")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		if a := h.do("POST", "/api/v1/wholeblock/order", u.token, "application/json", "{}"); a.status != 503 {
			return
		}
	}
	h.t.Fatal("order routes still answer 503")
}

// fund sets the ETH balance of an account.
func (h *harness) fund(account int64, qty string) {
	h.t.Helper()
	if _, err := h.pool.Exec(h.t.Context(), `UPDATE account_balances SET quantity = $2::numeric WHERE account_id = $1 AND token_id = 1`, account, qty); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) place(u user, fam topics.Family, body string) answer {
	return h.do("POST", "/api/v1/"+string(fam)+"/order", u.token, "application/json", body)
}

// orders returns data.orders of a place answer.
func orders(t testing.TB, a answer) []map[string]any {
	t.Helper()
	data, _ := a.body["data"].(map[string]any)
	list, ok := data["orders"].([]any)
	if a.status != 200 || a.body["success"] != true || !ok {
		t.Fatalf("place answered %d %v", a.status, a.body)
	}
	out := make([]map[string]any, len(list))
	for i, o := range list {
		out[i] = o.(map[string]any)
	}
	return out
}

func errorCode(o map[string]any) float64 {
	c, _ := o["errorCode"].(float64)
	return c
}

func (h *harness) count(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(h.t.Context(), query, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// commandsOf returns the order commands of type typ published so far.
func (h *harness) commandsOf(typ string) []*kgo.Record {
	h.t.Helper()
	var out []*kgo.Record
	for _, r := range h.records(topics.Orders) {
		if t, _, _ := kafka.RecordType(r); t == typ {
			out = append(out, r)
		}
	}
	return out
}

func order(account int64, instrument string, buy bool, typ int, qty, price string, extra string) string {
	p := ""
	if price != "" {
		p = fmt.Sprintf(`, "price": %q`, price)
	}
	return fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "side": %t, "orderType": %d, "quantity": %q%s%s}`,
		account, instrument, buy, typ, qty, p, extra)
}

// TestPlaceRulesAndCodes places one order per rule and expects the code
// docs/api.md gives for it; refused orders write nothing.
func TestPlaceRulesAndCodes(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "50")
	a := u.preconf
	for _, tc := range []struct {
		name string
		fam  topics.Family
		body string
		code float64
	}{
		{"unknown instrument", topics.WholeBlock, order(a, "ETH-WB-99999", true, 2, "1", "1", ""), 114},
		{"malformed instrument", topics.WholeBlock, order(a, "BTC-1", true, 2, "1", "1", ""), 114},
		{"other family's instrument", topics.WholeBlock, order(a, pcOpen, true, 2, "21000", "0.000000002", ""), 114},
		{"trading closed", topics.WholeBlock, order(a, wbClosed, true, 2, "1", "1", ""), 114},
		{"maturity passed", topics.WholeBlock, order(a, topics.InstrumentID(topics.WholeBlock, slotMatured), true, 2, "1", "1", ""), 114},
		{"finalized", topics.WholeBlock, order(a, topics.InstrumentID(topics.WholeBlock, slotFinished), true, 2, "1", "1", ""), 114},
		// The rules of order type, client order id, quantity and price are
		// platform/market's (its TestCheck); one case shows ingress applies them.
		{"price off the step", topics.WholeBlock, order(a, wbOpen, true, 2, "1", "0.00015", ""), 115},
		{"buy beyond funds", topics.WholeBlock, order(a, wbOpen, true, 2, "1", "99", ""), 123},
		{"limit buy", topics.WholeBlock, order(a, wbOpen, true, 2, "1", "1", ""), 0},
		{"whole block quantity 1.0", topics.WholeBlock, order(a, wbOpen, true, 2, "1.0", "1", ""), 0},
		{"market sell without price", topics.WholeBlock, order(a, wbOpen, false, 1, "1", "", ""), 0},
		{"passive limit sell", topics.InclusionPreconf, order(a, pcOpen, false, 2, "21000", "0.000000002", `, "passive": true`), 0},
		{"fill-or-kill buy", topics.InclusionPreconf, order(a, pcOpen, true, 3, "42000", "0.000000003", `, "clientOrderId": "fok-1"`), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.count(`SELECT count(*) FROM orders`)
			os := orders(t, h.place(u, tc.fam, tc.body))
			if len(os) != 1 || errorCode(os[0]) != tc.code {
				t.Fatalf("answer %v, want errorCode %v", os, tc.code)
			}
			o := os[0]
			stored := h.count(`SELECT count(*) FROM orders`) - before
			if tc.code != 0 {
				if o["status"] != 99.0 || o["orderId"] != nil || o["message"] == "" || stored != 0 {
					t.Fatalf("refused order %v, %d rows stored", o, stored)
				}
				return
			}
			if o["status"] != 0.0 || o["orderId"] == nil || o["errorCode"] != nil || stored != 1 {
				t.Fatalf("accepted order %v, %d rows stored", o, stored)
			}
		})
	}
}

// TestPlaceArrayJudgesEachOrder places an array in which some orders are
// refused: the others are stored, in order, and the answer lists each.
func TestPlaceArrayJudgesEachOrder(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "3")
	a := u.preconf
	body := "[" + strings.Join([]string{
		order(a, wbOpen, true, 2, "1", "1.5", `, "clientOrderId": "first"`), // reserves 1.5015
		order(a, wbOpen, true, 2, "1", "0.00015", ""),                       // 115
		order(a, wbOpen, false, 2, "1", "2", ""),                            // a sell reserves nothing
		order(a, wbOpen, true, 2, "1", "1.5", ""),                           // 1.5015 more than the 1.4985 left: 123
		order(a, wbOther, true, 2, "1", "1", `, "clientOrderId": "first"`),  // clientOrderId repeated: 122
		order(a, wbOther, true, 2, "1", "1", `, "clientOrderId": "second"`), // 1.001 fits
	}, ",") + "]"
	os := orders(t, h.place(u, topics.WholeBlock, body))
	want := []float64{0, 115, 0, 123, 122, 0}
	if len(os) != len(want) {
		t.Fatalf("%d orders answered", len(os))
	}
	var ids []float64
	for i, o := range os {
		if errorCode(o) != want[i] {
			t.Fatalf("order %d: %v, want errorCode %v", i, o, want[i])
		}
		if want[i] == 0 {
			ids = append(ids, o["orderId"].(float64))
			if o["accountId"] != float64(a) || o["status"] != 0.0 || o["fulfilled"] != "0" || o["averageTradePrice"] != nil {
				t.Fatalf("order %d as listed: %v", i, o)
			}
			if _, ok := o["preconfQuantity"]; !ok {
				t.Fatalf("whole-block order %d lacks preconfQuantity: %v", i, o)
			}
		}
	}
	if !slices.IsSorted(ids) || len(ids) != 3 {
		t.Fatalf("order ids %v", ids)
	}
	if n := h.count(`SELECT count(*) FROM orders WHERE account_id = $1`, a); n != 3 {
		t.Fatalf("%d order rows", n)
	}
	if l := h.locked(a); !l.Equal(decimal.RequireFromString("2.5025")) {
		t.Fatalf("locked %s, want 1.5015 + 1.001", l)
	}
	if n := len(h.commandsOf(topics.TypeOrderPlace)); n != 3 {
		t.Fatalf("%d order.place commands", n)
	}
}

// TestPlaceReservesPriceTimesQuantityWithFee checks the reservation of
// each kind of buy, rounded up to 18 decimals, and that sells reserve
// nothing.
func TestPlaceReservesPriceTimesQuantityWithFee(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{before: func(h *harness) {
		// A fee rate whose product needs rounding: 21,000 gas at 1 gwei
		// with a third on top is 0.000027999999999999999999993.
		m := marketOpen(topics.InclusionPreconf, slotOther, time.Now().Add(time.Hour))
		m.BuyFeeRate = "0.3333333333333333333"
		h.openMarket(m)
	}})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "1000")
	a := u.preconf
	for _, tc := range []struct {
		name    string
		fam     topics.Family
		body    string
		reserve string
	}{
		{"whole-block limit buy", topics.WholeBlock, order(a, wbOpen, true, 2, "1", "1.5", ""), "1.5015"},
		{"whole-block market buy without price reserves maxPrice", topics.WholeBlock, order(a, wbOpen, true, 1, "1", "", ""), "100.1"},
		{"whole-block market buy with a worst price", topics.WholeBlock, order(a, wbOpen, true, 1, "1", "2", ""), "2.002"},
		{"preconf fill-or-kill buy", topics.InclusionPreconf, order(a, pcOpen, true, 3, "21000", "0.000000002", ""), "0.000042042"},
		{"preconf buy rounded up", topics.InclusionPreconf, order(a, topics.InstrumentID(topics.InclusionPreconf, slotOther), true, 2, "21000", "0.000000001", ""), "0.000028"},
		{"sell", topics.WholeBlock, order(a, wbOpen, false, 2, "1", "3", ""), "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.locked(a)
			os := orders(t, h.place(u, tc.fam, tc.body))
			if errorCode(os[0]) != 0 {
				t.Fatalf("refused: %v", os[0])
			}
			want := decimal.RequireFromString(tc.reserve)
			if got := h.locked(a).Sub(before); !got.Equal(want) {
				t.Fatalf("locked %s more, want %s", got, want)
			}
			var reserved decimal.Decimal
			if err := h.pool.QueryRow(t.Context(), `SELECT reserved FROM orders WHERE order_id = $1`, int64(os[0]["orderId"].(float64))).Scan(&reserved); err != nil || !reserved.Equal(want) {
				t.Fatalf("order row reserved %s (%v), want %s", reserved, err, want)
			}
		})
	}
	h.fund(a, h.locked(a).Add(decimal.RequireFromString("1.5")).String())
	os := orders(t, h.place(u, topics.WholeBlock, order(a, wbOpen, true, 2, "1", "1.5", "")))
	if errorCode(os[0]) != 123 {
		t.Fatalf("a buy of 1.5015 with 1.5 available: %v", os[0])
	}
	os = orders(t, h.place(u, topics.WholeBlock, order(a, wbOpen, true, 2, "1", "1.4985", "")))
	if errorCode(os[0]) != 0 {
		t.Fatalf("a buy of 1.4999985 with 1.5 available: %v", os[0])
	}
}

// TestConcurrentBuysNeverOverdraw races 100 buys reserving 0.1 each for
// funds that cover 40 of them.
func TestConcurrentBuysNeverOverdraw(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "4.004")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[float64]int{}
	for range 100 {
		wg.Go(func() {
			a := h.place(u, topics.WholeBlock, order(u.preconf, wbOpen, true, 2, "1", "0.1", ""))
			mu.Lock()
			defer mu.Unlock()
			if a.status != 200 {
				t.Errorf("answer %d %v", a.status, a.body)
				return
			}
			codes[errorCode(orders(t, a)[0])]++
		})
	}
	wg.Wait()
	if codes[0] != 40 || codes[123] != 60 {
		t.Fatalf("codes %v, want 40 accepted and 60 refused with 123", codes)
	}
	if l := h.locked(u.preconf); !l.Equal(decimal.RequireFromString("4.004")) {
		t.Fatalf("locked %s", l)
	}
	if n := h.count(`SELECT count(*) FROM orders`); n != 40 {
		t.Fatalf("%d order rows", n)
	}
	if n := len(h.commandsOf(topics.TypeOrderPlace)); n != 40 {
		t.Fatalf("%d order.place commands", n)
	}
}

// TestPlaceStoresRowOutboxAndCommand follows one order into its row and
// its command on the slot's partition, and the outbox row out again.
func TestPlaceStoresRowOutboxAndCommand(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "1")
	os := orders(t, h.place(u, topics.InclusionPreconf,
		order(u.preconf, pcOpen, true, 2, "42000", "0.000000010", `, "clientOrderId": "c-1", "passive": true`)))
	o := os[0]
	id := int64(o["orderId"].(float64))
	if o["price"] != "0.00000001" || o["quantity"] != "42000" || o["marketId"] != float64(topics.MarketID(topics.InclusionPreconf, slotOpen)) ||
		o["clientOrderId"] != "c-1" || o["passive"] != true || o["source"] != 1.0 {
		t.Fatalf("answer %v", o)
	}
	if _, ok := o["preconfQuantity"]; ok {
		t.Fatalf("inclusion-preconf order has preconfQuantity: %v", o)
	}
	var row struct {
		user, account, market, slot int64
		instrument, client          string
		side, passive               bool
		typ, status, source         int
		price, qty, reserved        decimal.Decimal
		created                     time.Time
	}
	if err := h.pool.QueryRow(t.Context(), `SELECT user_id, account_id, market_id, slot, instrument_id, client_order_id, side, passive,
		order_type, status, source, price, quantity, reserved, create_date FROM orders WHERE order_id = $1`, id).Scan(
		&row.user, &row.account, &row.market, &row.slot, &row.instrument, &row.client, &row.side, &row.passive,
		&row.typ, &row.status, &row.source, &row.price, &row.qty, &row.reserved, &row.created); err != nil {
		t.Fatal(err)
	}
	if row.user != u.id || row.account != u.preconf || row.slot != slotOpen || row.instrument != pcOpen || row.client != "c-1" ||
		!row.side || !row.passive || row.typ != 2 || row.status != 0 || row.source != 1 ||
		!row.price.Equal(decimal.RequireFromString("0.00000001")) || !row.qty.Equal(decimal.NewFromInt(42000)) ||
		!row.reserved.Equal(decimal.RequireFromString("0.00042042")) || row.created.UnixMilli() != int64(o["createDate"].(float64)) {
		t.Fatalf("row %+v", row)
	}
	cmds := h.commandsOf(topics.TypeOrderPlace)
	if len(cmds) != 1 || cmds[0].Partition != slotOpen%16 || string(cmds[0].Key) != fmt.Sprint(slotOpen) {
		t.Fatalf("commands %v", cmds)
	}
	e, err := kafka.DecodeRecord(cmds[0])
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := topics.DecodeOrderPlace(e)
	if err != nil {
		t.Fatal(err)
	}
	want := topics.OrderPlace{OrderID: id, UserID: u.id, AccountID: u.preconf, InstrumentID: pcOpen, Side: true,
		OrderType: 2, Quantity: "42000", Price: "0.00000001", ClientOrderID: "c-1", Passive: true, Source: 1}
	if cmd != want || e.ID != fmt.Sprintf("order:%d", id) || e.Time != int64(o["createDate"].(float64)) {
		t.Fatalf("command %s %+v, want %+v", e.ID, cmd, want)
	}
	poll.Until(t, "outbox rows deleted after the acknowledgement", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })
	// A second order of the account with the same clientOrderId while
	// the first is live.
	os = orders(t, h.place(u, topics.InclusionPreconf, order(u.preconf, pcOpen, true, 2, "21000", "0.000000001", `, "clientOrderId": "c-1"`)))
	if errorCode(os[0]) != 122 {
		t.Fatalf("repeated clientOrderId: %v", os[0])
	}
	if _, err := h.pool.Exec(t.Context(), `UPDATE orders SET status = 10 WHERE order_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	os = orders(t, h.place(u, topics.InclusionPreconf, order(u.preconf, pcOpen, true, 2, "21000", "0.000000001", `, "clientOrderId": "c-1"`)))
	if errorCode(os[0]) != 0 {
		t.Fatalf("clientOrderId of a done order used again: %v", os[0])
	}
}

func (h *harness) cancel(u user, fam topics.Family, op, body string) answer {
	return h.do("POST", "/api/v1/"+string(fam)+"/"+op, u.token, "application/json", body)
}

func cancelItems(t testing.TB, a answer) []map[string]any {
	t.Helper()
	data, _ := a.body["data"].(map[string]any)
	list, ok := data["items"].([]any)
	if a.status != 200 || a.body["success"] != true || !ok {
		t.Fatalf("cancel answered %d %v", a.status, a.body)
	}
	out := make([]map[string]any, len(list))
	for i, o := range list {
		out[i] = o.(map[string]any)
	}
	return out
}

// placeIDs places orders and returns their ids.
func (h *harness) placeIDs(u user, fam topics.Family, bodies ...string) []int64 {
	h.t.Helper()
	var ids []int64
	body := "[" + strings.Join(bodies, ",") + "]"
	var a answer
	// A 503 with Retry-After is documented back-pressure (Kafka or the
	// database slow for a moment, nothing stored): a client sends again.
	poll.Until(h.t, "the orders accepted, not refused with 503", func() bool {
		a = h.place(u, fam, body)
		return a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == ""
	})
	for _, o := range orders(h.t, a) {
		if errorCode(o) != 0 {
			h.t.Fatalf("refused: %v", o)
		}
		ids = append(ids, int64(o["orderId"].(float64)))
	}
	return ids
}

func decodeCommand[T any](t testing.TB, r *kgo.Record) (topics.Envelope, T) {
	t.Helper()
	e, err := kafka.DecodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := e.UnmarshalData(&v); err != nil {
		t.Fatal(err)
	}
	return e, v
}

// TestCancelOrderLookups: own live orders are cancelled (code 1 and an
// order.cancel), unknown and other accounts' orders answer 108, final
// ones 109.
func TestCancelOrderLookups(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	other := h.newUser("0x0000000000000000000000000000000000000b0b", "0")
	ids := h.placeIDs(u, topics.WholeBlock,
		order(u.preconf, wbOpen, false, 2, "1", "5", `, "clientOrderId": "live"`),
		order(u.preconf, wbOpen, false, 2, "1", "6", `, "clientOrderId": "done"`),
		order(u.preconf, wbOther, false, 2, "1", "7", ""))
	theirs := h.placeIDs(other, topics.WholeBlock, order(other.preconf, wbOpen, false, 2, "1", "5", ""))
	if _, err := h.pool.Exec(t.Context(), `UPDATE orders SET status = 11 WHERE order_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	body := func(member string) string {
		return fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, %s}`, u.preconf, wbOpen, member)
	}
	for _, tc := range []struct {
		name   string
		member string
		code   float64
	}{
		{"own live order by id", fmt.Sprintf(`"orderId": %d`, ids[0]), 1},
		{"own live order by clientOrderId", `"clientOrderId": "live"`, 1},
		{"cancelled order", fmt.Sprintf(`"orderId": %d`, ids[1]), 109},
		{"cancelled order by clientOrderId", `"clientOrderId": "done"`, 108},
		{"order of another market", fmt.Sprintf(`"orderId": %d`, ids[2]), 108},
		{"another user's order", fmt.Sprintf(`"orderId": %d`, theirs[0]), 108},
		{"unknown order", `"orderId": 987654321`, 108},
		{"unknown clientOrderId", `"clientOrderId": "nope"`, 108},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.commandsOf(topics.TypeOrderCancel))
			items := cancelItems(t, h.cancel(u, topics.WholeBlock, "cancel-order", body(tc.member)))
			if len(items) != 1 || items[0]["code"] != tc.code {
				t.Fatalf("items %v, want code %v", items, tc.code)
			}
			cmds := h.commandsOf(topics.TypeOrderCancel)
			if tc.code != 1 {
				if len(cmds) != before {
					t.Fatalf("a refused cancel was published")
				}
				return
			}
			if len(cmds) != before+1 || cmds[len(cmds)-1].Partition != slotOpen%16 {
				t.Fatalf("commands %v", cmds)
			}
			e, cmd := decodeCommand[topics.OrderCancel](t, cmds[len(cmds)-1])
			if cmd.OrderID != ids[0] || cmd.AccountID != u.preconf || cmd.UserID != u.id || cmd.InstrumentID != wbOpen ||
				!strings.HasPrefix(e.ID, "cancel:") || items[0]["orderId"] != float64(ids[0]) || items[0]["clientOrderId"] != "live" {
				t.Fatalf("command %s %+v, item %v", e.ID, cmd, items[0])
			}
		})
	}
	a := h.cancel(u, topics.WholeBlock, "cancel-order", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderId": %d}`, other.preconf, wbOpen, theirs[0]))
	if a.status != 403 || code(a) != 1 {
		t.Fatalf("cancel with another user's account: %d %v", a.status, a.body)
	}
	a = h.cancel(u, topics.WholeBlock, "cancel-order", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderId": %d}`, u.preconf, pcOpen, ids[0]))
	if a.status != 400 || code(a) != 1001 || !strings.Contains(a.body["message"].(string), "instrumentId") {
		t.Fatalf("cancel naming another family's instrument: %d %v", a.status, a.body)
	}
	a = h.cancel(u, topics.WholeBlock, "cancel-order", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q}`, u.preconf, wbOpen))
	if a.status != 400 || !strings.Contains(a.body["message"].(string), "orderId or clientOrderId") {
		t.Fatalf("cancel naming no order: %d %v", a.status, a.body)
	}
}

// TestCancelBatch answers each named order in the matcher's order
// (orderIds, then clientOrderIds) and publishes one command for the live
// ones.
func TestCancelBatch(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	ids := h.placeIDs(u, topics.WholeBlock,
		order(u.preconf, wbOpen, false, 2, "1", "5", `, "clientOrderId": "a"`),
		order(u.preconf, wbOpen, false, 2, "1", "6", ""),
		order(u.preconf, wbOpen, false, 2, "1", "7", `, "clientOrderId": "c"`),
		order(u.preconf, wbOpen, false, 2, "1", "8", ""))
	if _, err := h.pool.Exec(t.Context(), `UPDATE orders SET status = 10 WHERE order_id = $1`, ids[3]); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderIds": [%d, %d, 55, %d, %d], "clientOrderIds": ["c", "a", "zz"]}`,
		u.preconf, wbOpen, ids[1], ids[3], ids[1], ids[0])
	items := cancelItems(t, h.cancel(u, topics.WholeBlock, "cancel-batch-orders", body))
	want := []struct {
		id   int64
		code float64
	}{{ids[1], 1}, {ids[3], 109}, {55, 108}, {ids[1], 109}, {ids[0], 1}, {ids[2], 1}, {ids[0], 109}, {0, 108}}
	if len(items) != len(want) {
		t.Fatalf("items %v", items)
	}
	for i, w := range want {
		got, _ := items[i]["orderId"].(float64)
		if items[i]["code"] != w.code || int64(got) != w.id {
			t.Fatalf("item %d: %v, want order %d code %v", i, items[i], w.id, w.code)
		}
	}
	cmds := h.commandsOf(topics.TypeOrderCancelBatch)
	if len(cmds) != 1 {
		t.Fatalf("%d cancel_batch commands", len(cmds))
	}
	_, cmd := decodeCommand[topics.OrderCancelBatch](t, cmds[0])
	if !slices.Equal(cmd.OrderIDs, []int64{ids[1], ids[0], ids[2]}) || cmd.InstrumentID != wbOpen || cmd.AccountID != u.preconf {
		t.Fatalf("command %+v", cmd)
	}
	a := h.cancel(u, topics.WholeBlock, "cancel-batch-orders", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderIds": []}`, u.preconf, wbOpen))
	if a.status != 400 {
		t.Fatalf("a batch naming nothing: %d %v", a.status, a.body)
	}
}

// TestCancelAllFamilyOrInstrument: without an instrument (omitted, null
// or blank) every open market of the family with live orders gets one
// order.cancel_all; with one, only that market.
func TestCancelAllFamilyOrInstrument(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	wb := h.placeIDs(u, topics.WholeBlock,
		order(u.preconf, wbOpen, false, 2, "1", "5", ""),
		order(u.preconf, wbOther, false, 2, "1", "6", ""),
		order(u.preconf, wbOpen, false, 2, "1", "7", ""),
		order(u.preconf, wbOpen, false, 2, "1", "8", ""))
	h.placeIDs(u, topics.InclusionPreconf, order(u.preconf, pcOpen, false, 2, "21000", "0.000000002", ""))
	if _, err := h.pool.Exec(t.Context(), `UPDATE orders SET status = 11 WHERE order_id = $1`, wb[3]); err != nil {
		t.Fatal(err)
	}
	// Live rows in a market whose trading closed and in a finalized one
	// (the settler has not caught up): their orders expire, no cancel goes
	// there.
	for i, slot := range []uint64{slotClosed, slotFinished} {
		if _, err := h.pool.Exec(t.Context(), `INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type, quantity)
			VALUES ($1, $2, $3, $4, $5, $6, false, 2, 1)`, 999990+i, u.id, u.preconf, topics.MarketID(topics.WholeBlock, slot),
			topics.InstrumentID(topics.WholeBlock, slot), slot); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, member string
		ids          []int64
		instruments  []string
	}{
		{"omitted", ``, wb[:3], []string{wbOpen, wbOther}},
		{"null", `, "instrumentId": null`, wb[:3], []string{wbOpen, wbOther}},
		{"blank", `, "instrumentId": "  "`, wb[:3], []string{wbOpen, wbOther}},
		{"one instrument", fmt.Sprintf(`, "instrumentId": %q`, wbOther), wb[1:2], []string{wbOther}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, r := range h.commandsOf(topics.TypeOrderCancelAll) {
				seen[string(r.Value)] = true
			}
			a := h.cancel(u, topics.WholeBlock, "cancel-all-orders", fmt.Sprintf(`{"accountId": %d%s}`, u.preconf, tc.member))
			data, _ := a.body["data"].(map[string]any)
			list, _ := data["cancelledOrderIds"].([]any)
			var got []int64
			for _, v := range list {
				got = append(got, int64(v.(float64)))
			}
			if a.status != 200 || !slices.Equal(got, tc.ids) {
				t.Fatalf("answer %d %v, want ids %v", a.status, a.body, tc.ids)
			}
			var instruments []string
			for _, r := range h.commandsOf(topics.TypeOrderCancelAll) {
				if seen[string(r.Value)] {
					continue
				}
				_, cmd := decodeCommand[topics.OrderCancelAll](t, r)
				_, slot, _ := topics.ParseInstrumentID(cmd.InstrumentID)
				if cmd.AccountID != u.preconf || cmd.UserID != u.id || r.Partition != int32(slot%16) {
					t.Fatalf("command %+v on partition %d", cmd, r.Partition)
				}
				instruments = append(instruments, cmd.InstrumentID)
			}
			slices.Sort(instruments)
			if !slices.Equal(instruments, tc.instruments) {
				t.Fatalf("cancel_all of %v, want %v", instruments, tc.instruments)
			}
		})
	}
	a := h.cancel(u, topics.WholeBlock, "cancel-all-orders", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q}`, u.preconf, pcOpen))
	if a.status != 400 {
		t.Fatalf("cancel-all of another family's instrument: %d %v", a.status, a.body)
	}
}

// TestOrderRoutesRefuseBadRequests: media type, malformed bodies, limits,
// authentication, accounts and an unavailable broker.
func TestOrderRoutesRefuseBadRequests(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	other := h.newUser("0x0000000000000000000000000000000000000b0b", "0")
	ok := order(u.preconf, wbOpen, false, 2, "1", "5", "")
	many := "[" + strings.Repeat(ok+",", 50) + ok + "]"
	for _, tc := range []struct {
		name, path, token, contentType, body string
		status                               int
		code                                 float64
		message                              string
	}{
		{"text body", "/api/v1/wholeblock/order", u.token, "text/plain", ok, 415, 1001, "Content-Type"},
		{"no content type", "/api/v1/wholeblock/cancel-all-orders", u.token, "", `{}`, 415, 1001, "Content-Type"},
		{"malformed JSON", "/api/v1/wholeblock/order", u.token, "application/json", `{"accountId": `, 400, 1001, "malformed JSON"},
		{"not an object", "/api/v1/wholeblock/order", u.token, "application/json", `"buy"`, 400, 1001, "JSON object"},
		{"empty array", "/api/v1/wholeblock/order", u.token, "application/json", `[]`, 400, 1001, "1 to 50 orders"},
		{"too many orders", "/api/v1/wholeblock/order", u.token, "application/json", many, 400, 1001, "1 to 50 orders, got 51"},
		{"side not a boolean", "/api/v1/wholeblock/order", u.token, "application/json",
			fmt.Sprintf(`[%s, {"accountId": %d, "instrumentId": %q, "side": "buy", "orderType": 2, "quantity": "1", "price": "1"}]`, ok, u.preconf, wbOpen),
			400, 1001, "order 1: side must be true or false"},
		{"missing quantity", "/api/v1/wholeblock/order", u.token, "application/json",
			fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "side": true, "orderType": 2}`, u.preconf, wbOpen), 400, 1001, "quantity is required"},
		{"account not a number", "/api/v1/wholeblock/order", u.token, "application/json",
			fmt.Sprintf(`{"accountId": "x", "instrumentId": %q, "side": true, "orderType": 2, "quantity": "1"}`, wbOpen), 400, 1001, "accountId must be an integer"},
		{"no token", "/api/v1/wholeblock/order", "", "application/json", ok, 401, 1, ""},
		{"bad token", "/api/v1/inclusion-preconf/cancel-order", "nope", "application/json", `{}`, 401, 1, ""},
		{"another user's account", "/api/v1/wholeblock/order", u.token, "application/json", order(other.preconf, wbOpen, false, 2, "1", "5", ""), 403, 1, "not your preconf trading account"},
		{"own current account", "/api/v1/wholeblock/order", u.token, "application/json", order(u.current, wbOpen, false, 2, "1", "5", ""), 403, 1, "not your preconf trading account"},
		{"unknown account", "/api/v1/inclusion-preconf/cancel-all-orders", u.token, "application/json", `{"accountId": 99999}`, 403, 1, ""},
		{"method", "/api/v1/wholeblock/order", u.token, "application/json", ok, 400, 1001, "method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			if tc.name == "method" {
				method = "PUT"
			}
			a := h.do(method, tc.path, tc.token, tc.contentType, tc.body)
			msg, _ := a.body["message"].(string)
			if a.status != tc.status || code(a) != tc.code || !strings.Contains(msg, tc.message) {
				t.Fatalf("answer %d %v", a.status, a.body)
			}
			if tc.status == 401 && a.header.Get("WWW-Authenticate") != "Bearer" {
				t.Fatalf("401 without WWW-Authenticate")
			}
		})
	}
	if n := h.count(`SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d orders stored by refused requests", n)
	}
	h.kafkaDown.Store(true)
	a := h.place(u, topics.WholeBlock, ok)
	if a.status != 503 || code(a) != 21 || a.header.Get("Retry-After") == "" {
		t.Fatalf("place while Kafka is down: %d %v", a.status, a.body)
	}
	h.kafkaDown.Store(false)
	if n := h.count(`SELECT count(*) FROM orders`); n != 0 {
		t.Fatalf("%d orders stored while Kafka was down", n)
	}
}

// TestCommandsSurviveKafkaOutage stops the broker after an order: the next
// order is stored with its reservation and answered as accepted (it is
// durable), and its command reaches the topic on the slot's partition
// through the outbox relay once the broker is back. A cancel while the
// broker is down is refused with 503: nothing of it was stored.
func TestCommandsSurviveKafkaOutage(t *testing.T) {
	// A broker of its own: it runs beside the other outage tests, after
	// those that take the shared broker in turn.
	t.Parallel()
	h := newMarketsHarness(t, harnessOptions{ownBroker: true,
		outbox: ingress.OutboxConfig{PublishTimeout: 300 * time.Millisecond, RelayAge: 200 * time.Millisecond, RelayEvery: 100 * time.Millisecond},
	})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "10")
	first := h.placeIDs(u, topics.WholeBlock, order(u.preconf, wbOpen, true, 2, "1", "1", ""))
	poll.Until(t, "the first command's outbox row deleted", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })
	h.stopBroker()

	os := orders(t, h.place(u, topics.WholeBlock, order(u.preconf, wbOpen, true, 2, "1", "2", "")))
	if errorCode(os[0]) != 0 {
		t.Fatalf("order while the broker is down: %v", os[0])
	}
	second := int64(os[0]["orderId"].(float64))
	if n := h.count(`SELECT count(*) FROM outbox`); n != 1 {
		t.Fatalf("%d outbox rows while the broker is down", n)
	}
	if l := h.locked(u.preconf); !l.Equal(decimal.RequireFromString("3.003")) {
		t.Fatalf("locked %s", l)
	}
	a := h.cancel(u, topics.WholeBlock, "cancel-order", fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderId": %d}`, u.preconf, wbOpen, first[0]))
	if a.status != 503 || a.header.Get("Retry-After") == "" {
		t.Fatalf("cancel while the broker is down: %d %v", a.status, a.body)
	}

	h.startBroker()
	poll.Until(t, "the relay delivers the stored command", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })
	seen := map[string]int32{}
	for _, r := range h.commandsOf(topics.TypeOrderPlace) {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		seen[e.ID] = r.Partition
	}
	for _, id := range []int64{first[0], second} {
		p, ok := seen[fmt.Sprintf("order:%d", id)]
		if !ok || p != slotOpen%16 {
			t.Fatalf("command of order %d: published %t on partition %d; seen %v", id, ok, p, seen)
		}
	}
}

// TestPlaceAnswersEveryConcurrentRequestOnce sends requests of many users
// at once, so that they share transactions, and checks each gets its own
// orders back.
func TestPlaceAnswersEveryConcurrentRequestOnce(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	all := map[int64]bool{}
	for i := range 20 {
		u := h.newUser(fmt.Sprintf("0x%040x", 0xa000+i), "0")
		h.fund(u.preconf, "100")
		wg.Go(func() {
			for range 5 {
				a := h.place(u, topics.WholeBlock, "["+order(u.preconf, wbOpen, true, 2, "1", "1", "")+","+order(u.preconf, wbOther, false, 2, "1", "3", "")+"]")
				if a.status != 200 {
					t.Errorf("answer %d %v", a.status, a.body)
					return
				}
				for _, o := range orders(t, a) {
					id := int64(o["orderId"].(float64))
					var owner int64
					if err := h.pool.QueryRow(context.Background(), `SELECT account_id FROM orders WHERE order_id = $1`, id).Scan(&owner); err != nil || owner != u.preconf {
						t.Errorf("order %d answered to account %d belongs to %d (%v)", id, u.preconf, owner, err)
					}
					mu.Lock()
					if all[id] {
						t.Errorf("order id %d answered twice", id)
					}
					all[id] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(all) != 200 || h.count(`SELECT count(*) FROM orders`) != 200 {
		t.Fatalf("%d ids answered, %d rows", len(all), h.count(`SELECT count(*) FROM orders`))
	}
}
