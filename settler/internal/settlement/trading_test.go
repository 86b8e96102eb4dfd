package settlement_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/internal/settlement"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var start = time.UnixMilli(1_738_824_000_000)

type harness struct {
	t     *testing.T
	pool  *pgxpool.Pool
	sys   ledger.System
	users []settlementtest.Account
}

// newHarness is a database with users funded with 10 ETH each in their
// preconf trading accounts.
func newHarness(t *testing.T, users int) *harness {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	h := &harness{t: t, pool: pool, users: settlementtest.Fund(t, pool, users, "10")}
	var err error
	if h.sys, err = ledger.LoadSystem(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return h
}

func decode(t testing.TB, recs []settlementtest.Record) []settlement.Record {
	t.Helper()
	out := make([]settlement.Record, len(recs))
	for i, r := range recs {
		b, err := topics.Encode(r.Envelope)
		if err != nil {
			t.Fatal(err)
		}
		e, err := topics.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = settlement.Decode(r.Topic, e, b)
		if out[i].Invalid != "" {
			t.Fatalf("record %s: %s", e.ID, out[i].Invalid)
		}
	}
	return out
}

// apply applies recs in one transaction.
func (h *harness) apply(recs ...settlementtest.Record) settlement.Result {
	h.t.Helper()
	ctx := context.Background()
	var res settlement.Result
	err := pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
		var err error
		res, err = settlement.Apply(ctx, tx, h.sys, decode(h.t, recs), quiet)
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *harness) audit() []audit.Violation {
	h.t.Helper()
	v, err := auditQuiescent(context.Background(), h.pool)
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}

func auditQuiescent(ctx context.Context, pool *pgxpool.Pool) ([]audit.Violation, error) {
	return audit.Run(ctx, pool, 10, audit.Quiescent)
}

func (h *harness) mustAudit() {
	h.t.Helper()
	if v := h.audit(); len(v) > 0 {
		h.t.Fatalf("audit: %v", v)
	}
}

func (h *harness) balance(acc int64) (q, l decimal.Decimal) {
	h.t.Helper()
	if err := h.pool.QueryRow(context.Background(), `SELECT quantity, locked FROM account_balances WHERE account_id = $1 AND token_id = 1`, acc).Scan(&q, &l); err != nil {
		h.t.Fatal(err)
	}
	return
}

func (h *harness) position(acc int64, inst string) (q, l decimal.Decimal, avg *decimal.Decimal, expired bool) {
	h.t.Helper()
	var a decimal.NullDecimal
	err := h.pool.QueryRow(context.Background(), `SELECT quantity, locked, average_price, expired FROM positions WHERE account_id = $1 AND instrument_id = $2`,
		acc, inst).Scan(&q, &l, &a, &expired)
	if err != nil {
		h.t.Fatalf("position of %d in %s: %v", acc, inst, err)
	}
	if a.Valid {
		avg = &a.Decimal
	}
	return
}

type orderRow struct {
	status                                    int
	fulfilled, fees, reserved, spent, settled decimal.Decimal
	avg                                       *decimal.Decimal
	released                                  bool
	errorCode                                 *int
}

func (h *harness) order(id int64) orderRow {
	h.t.Helper()
	var r orderRow
	var avg decimal.NullDecimal
	err := h.pool.QueryRow(context.Background(), `SELECT status, fulfilled, fees, reserved, spent, settled_quantity, average_trade_price, released, error_code
		FROM orders WHERE order_id = $1`, id).Scan(&r.status, &r.fulfilled, &r.fees, &r.reserved, &r.spent, &r.settled, &avg, &r.released, &r.errorCode)
	if err != nil {
		h.t.Fatalf("order %d: %v", id, err)
	}
	if avg.Valid {
		r.avg = &avg.Decimal
	}
	return r
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// twoUsers is a harness with a seller, whose slot is open with 1,000 gas
// of preconf, and a buyer.
func twoUsers(t *testing.T) (h *harness, s *settlementtest.Stream, seller, buyer settlementtest.Account) {
	h = newHarness(t, 2)
	s = settlementtest.NewStream(start)
	s.Open(slot, h.users[0], 1000, settlementtest.DefaultFees)
	return h, s, h.users[0], h.users[1]
}

// blockSale has the seller's resting ask for the whole block taken by the
// buyer's bid at price, with the seller's 1,000 gas.
func blockSale(s *settlementtest.Stream, seller, buyer settlementtest.Account, price string) (sell, buy *settlementtest.Order) {
	sell = s.Place(seller, topics.WholeBlock, slot, false, topics.OrderTypeLimit, price, "1")
	buy = s.Place(buyer, topics.WholeBlock, slot, true, topics.OrderTypeLimit, price, "1")
	s.Accept(sell, true)
	s.Accept(buy, false)
	s.Trade(buy, sell, price, 1, 1000)
	return sell, buy
}

func equal(t *testing.T, what string, got, want decimal.Decimal) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

const slot = 11_000_000

var (
	wb = topics.InstrumentID(topics.WholeBlock, slot)
	pc = topics.InstrumentID(topics.InclusionPreconf, slot)
)

// TestPartialFillsThenCancelReleaseTheRest: a preconf buy is filled twice
// at lower prices, then cancelled; what its fills did not spend of its
// reservation is unlocked, once.
func TestPartialFillsThenCancelReleaseTheRest(t *testing.T) {
	h := newHarness(t, 2)
	seller, buyer := h.users[0], h.users[1]
	s := settlementtest.NewStream(start)
	s.Open(slot, seller, 1_000_000, settlementtest.DefaultFees)
	sell1 := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000002", "10000")
	buy := s.Place(buyer, topics.InclusionPreconf, slot, true, topics.OrderTypeLimit, "0.000000003", "30000")
	sell2 := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.0000000025", "5000")
	settlementtest.InsertOrders(t, h.pool, sell1, buy, sell2)
	equal(t, "reserved", buy.Reserved, dec("0.00009009"))
	s.Accept(sell1, true)
	s.Accept(buy, false)
	s.Trade(buy, sell1, "0.000000002", 10000, 0)
	s.Accept(sell2, false)
	s.Trade(sell2, buy, "0.000000003", 5000, 0)
	s.Cancel(buy, false)
	h.apply(s.Records...)

	o := h.order(buy.ID)
	if o.status != topics.OrderStatusCancelledByUser || !o.released || !o.fulfilled.Equal(dec("15000")) || !o.settled.Equal(dec("15000")) {
		t.Fatalf("buy order %+v", o)
	}
	equal(t, "spent", o.spent, dec("0.000035035"))
	equal(t, "buy fees", o.fees, dec("0.000000035"))
	equal(t, "average trade price", *o.avg, dec("0.000000002333333333"))
	q, l := h.balance(buyer.Account)
	equal(t, "buyer quantity", q, dec("10").Sub(dec("0.000035035")))
	equal(t, "buyer locked", l, decimal.Zero)
	q, _ = h.balance(seller.Account)
	equal(t, "seller quantity", q, dec("10.0000343"))
	q, _ = h.balance(h.sys.Fees)
	equal(t, "fees account", q, dec("0.000000735"))
	pq, pl, avg, _ := h.position(buyer.Account, pc)
	equal(t, "buyer position", pq, dec("15000"))
	equal(t, "buyer position locked", pl, decimal.Zero)
	equal(t, "buyer average price", *avg, dec("0.000000002333333333"))
	pq, _, avg, _ = h.position(seller.Account, pc)
	equal(t, "seller position", pq, dec("985000"))
	if avg != nil {
		t.Errorf("issued holding has average price %s", avg)
	}
	var types []int
	rows, _ := h.pool.Query(context.Background(), `SELECT type FROM postings WHERE account_id = $1 AND entry_id IN
		(SELECT entry_id FROM journal WHERE kind = 'trade.executed') ORDER BY posting_id`, buyer.Account)
	types, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(types) != 4 || types[0] != ledger.TypeBuy || types[1] != ledger.TypeTradingFee {
		t.Fatalf("buyer's posting types %v %v", types, err)
	}
	h.mustAudit()

	// Everything again: nothing changes, nothing is released twice.
	before := settlementtest.Snapshot(t, h.pool)
	res := h.apply(s.Records...)
	if res.Fills != 0 || res.Duplicates != 2 || res.Released != 0 || res.Events != 0 {
		t.Fatalf("replay %+v", res)
	}
	if after := settlementtest.Snapshot(t, h.pool); after != before {
		t.Fatalf("replay changed the state:\n%s", settlementtest.Diff(after, before))
	}
}

// TestPrimaryAndSecondarySales: the slot's seller sells the whole block
// (primary fee) with the preconf gas it neither sold nor offers; the buyer
// resells it (secondary fee) with that gas.
func TestPrimaryAndSecondarySales(t *testing.T) {
	h := newHarness(t, 4)
	seller, b1, b2, b3 := h.users[0], h.users[1], h.users[2], h.users[3]
	s := settlementtest.NewStream(start)
	s.Open(slot, seller, 1_000_000, settlementtest.DefaultFees)
	gasSold := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000001", "100000")
	gasBuy := s.Place(b3, topics.InclusionPreconf, slot, true, topics.OrderTypeMarket, "0.000000001", "100000")
	gasOffered := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000005", "50000")
	block := s.Place(seller, topics.WholeBlock, slot, false, topics.OrderTypeLimit, "1", "1")
	buy1 := s.Place(b1, topics.WholeBlock, slot, true, topics.OrderTypeLimit, "1.5", "1")
	resell := s.Place(b1, topics.WholeBlock, slot, false, topics.OrderTypeLimit, "2", "1")
	buy2 := s.Place(b2, topics.WholeBlock, slot, true, topics.OrderTypeFillOrKill, "2", "1")
	settlementtest.InsertOrders(t, h.pool, gasSold, gasBuy, gasOffered, block, buy1, resell, buy2)
	s.Accept(gasSold, true)
	s.Accept(gasBuy, false)
	s.Trade(gasBuy, gasSold, "0.000000001", 100000, 0)
	s.Accept(gasOffered, true)
	s.Accept(block, true)
	s.Accept(buy1, false)
	primary := s.Trade(buy1, block, "1", 1, 850_000)
	s.Accept(resell, true)
	s.Accept(buy2, false)
	secondary := s.Trade(buy2, resell, "2", 1, 850_000)
	h.apply(s.Records...)

	if !primary.PrimarySale || secondary.PrimarySale {
		t.Fatalf("primary %v secondary %v", primary.PrimarySale, secondary.PrimarySale)
	}
	var fees []string
	rows, _ := h.pool.Query(context.Background(), `SELECT primary_sale || ' ' || buyer_fee || ' ' || seller_fee FROM trades WHERE instrument_id = $1 ORDER BY trade_id`, wb)
	fees, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	if len(fees) != 2 || fees[0] != "true 0.001 0.02" || fees[1] != "false 0.002 0.01" {
		t.Fatalf("whole-block trades %v", fees)
	}
	q, _ := h.balance(seller.Account)
	equal(t, "seller", q, dec("10").Add(dec("0.0001")).Sub(dec("0.000002")).Add(dec("1")).Sub(dec("0.02")))
	q, _ = h.balance(b1.Account)
	equal(t, "first buyer", q, dec("10").Sub(dec("1.001")).Add(dec("2")).Sub(dec("0.01")))
	q, l := h.balance(b2.Account)
	equal(t, "second buyer", q, dec("10").Sub(dec("2.002")))
	equal(t, "second buyer locked", l, decimal.Zero)
	if o := h.order(buy1.ID); !o.released || !o.spent.Equal(dec("1.001")) {
		t.Fatalf("first buy %+v", o)
	}

	for _, c := range []struct {
		acc       int64
		inst      string
		qty, lock string
		avg       string
	}{
		{seller.Account, wb, "0", "0", ""},
		{b1.Account, wb, "0", "0", "1"},
		{b2.Account, wb, "1", "0", "2"},
		{seller.Account, pc, "50000", "50000", ""},
		{b3.Account, pc, "100000", "0", "0.000000001"},
		{b1.Account, pc, "0", "0", ""},
		{b2.Account, pc, "850000", "0", ""},
	} {
		q, l, avg, _ := h.position(c.acc, c.inst)
		equal(t, "position quantity", q, dec(c.qty))
		equal(t, "position locked", l, dec(c.lock))
		if (avg == nil) != (c.avg == "") || (avg != nil && !avg.Equal(dec(c.avg))) {
			t.Errorf("position of %d in %s: average %v, want %q", c.acc, c.inst, avg, c.avg)
		}
	}
	h.mustAudit()
}

// TestExpiry: at trading close the resting orders expire, their
// reservations and locked positions are released, and the slot's
// positions become expired, also those a later fill creates.
func TestExpiry(t *testing.T) {
	h, s, seller, buyer := twoUsers(t)
	ask := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000004", "600")
	bid := s.Place(buyer, topics.InclusionPreconf, slot, true, topics.OrderTypeLimit, "0.000000002", "300")
	settlementtest.InsertOrders(t, h.pool, ask, bid)
	s.Accept(ask, true)
	s.Accept(bid, true)
	h.apply(s.Records...)
	_, l, _, _ := h.position(seller.Account, pc)
	equal(t, "locked by the ask", l, dec("600"))
	_, l = h.balance(buyer.Account)
	equal(t, "reserved by the bid", l, bid.Reserved)

	s.Records = nil
	s.Close(slot, ask, bid)
	h.apply(s.Records...)
	for _, o := range []*settlementtest.Order{ask, bid} {
		if r := h.order(o.ID); r.status != topics.OrderStatusExpired || !r.released {
			t.Fatalf("%s: %+v", o, r)
		}
	}
	_, l = h.balance(buyer.Account)
	equal(t, "buyer locked after expiry", l, decimal.Zero)
	q, l, _, expired := h.position(seller.Account, pc)
	if !expired || !l.IsZero() || !q.Equal(dec("1000")) {
		t.Fatalf("seller's position %s locked %s expired %v", q, l, expired)
	}
	if _, _, _, expired := h.position(seller.Account, wb); !expired {
		t.Fatal("whole-block position not expired")
	}
	h.mustAudit()
}

// TestRejectedBuyReleasesAll: a rejected buy gives back all it reserved;
// a rejected sell locks nothing.
func TestRejectedBuyReleasesAll(t *testing.T) {
	h, s, _, buyer := twoUsers(t)
	buy := s.Place(buyer, topics.WholeBlock, slot, true, topics.OrderTypeLimit, "3", "1")
	sell := s.Place(buyer, topics.WholeBlock, slot, false, topics.OrderTypeLimit, "3", "1")
	settlementtest.InsertOrders(t, h.pool, buy, sell)
	_, l := h.balance(buyer.Account)
	equal(t, "reserved", l, dec("3.003"))
	s.Reject(buy, topics.CodePassiveWouldTake)
	s.Reject(sell, topics.CodeInsufficientPosition)
	h.apply(s.Records...)
	q, l := h.balance(buyer.Account)
	equal(t, "quantity", q, dec("10"))
	equal(t, "locked", l, decimal.Zero)
	if r := h.order(buy.ID); r.status != topics.OrderStatusError || !r.released || r.errorCode == nil || *r.errorCode != topics.CodePassiveWouldTake {
		t.Fatalf("rejected buy %+v", r)
	}
	h.mustAudit()
}

// TestOrdersIngressNeverWrote: order events create the rows of orders
// that reached the log without ingress; their fills pay from available
// funds.
func TestOrdersIngressNeverWrote(t *testing.T) {
	h, s, seller, buyer := twoUsers(t)
	_, buy := blockSale(s, seller, buyer, "1")
	h.apply(s.Records...)
	if r := h.order(buy.ID); r.status != topics.OrderStatusDone || !r.released || !r.reserved.IsZero() || !r.spent.Equal(dec("1.001")) {
		t.Fatalf("buy %+v", r)
	}
	q, l := h.balance(buyer.Account)
	equal(t, "buyer", q, dec("8.999"))
	equal(t, "buyer locked", l, decimal.Zero)
	if v := h.audit(); len(v) != 1 || v[0].Check != "buy orders spend at most their reservation" {
		t.Fatalf("audit %v, want the overspent order reported", v)
	}
}

// TestRefusedFill: a fill the buyer cannot pay changes nothing; its
// journal entry says why and the audit reports it.
func TestRefusedFill(t *testing.T) {
	h, s, seller, buyer := twoUsers(t)
	blockSale(s, seller, buyer, "50")
	res := h.apply(s.Records...)
	if res.Rejected != 1 || res.Fills != 0 {
		t.Fatalf("result %+v", res)
	}
	var status, reason string
	if err := h.pool.QueryRow(context.Background(), `SELECT status, reason FROM journal WHERE command_id = $1`, "fill:110000000000001").Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "rejected" || reason == "" {
		t.Fatalf("journal %s %q", status, reason)
	}
	if q, _ := h.balance(buyer.Account); !q.Equal(dec("10")) {
		t.Fatalf("buyer paid: %s", q)
	}
	found := false
	for _, v := range h.audit() {
		found = found || v.Check == "fills are settled"
	}
	if !found {
		t.Fatalf("audit %v does not report the refused fill", h.audit())
	}
}

// scenario is a stream with every kind of record: primary and secondary
// sales of both families, partial fills, cancels, a rejection, a system
// cancel, expiry, and orders ingress never wrote.
func scenario(t *testing.T, h *harness) *settlementtest.Stream {
	t.Helper()
	u := h.users
	s := settlementtest.NewStream(start)
	const other = slot + 1
	s.Open(slot, u[0], 1_000_000, settlementtest.DefaultFees)
	s.Open(other, u[1], 500_000, settlementtest.DefaultFees)
	var ingress []*settlementtest.Order
	place := func(acc settlementtest.Account, f topics.Family, n uint64, buy bool, typ int, price, qty string) *settlementtest.Order {
		o := s.Place(acc, f, n, buy, typ, price, qty)
		ingress = append(ingress, o)
		return o
	}
	gasAsk := place(u[0], topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000002", "200000")
	s.Accept(gasAsk, true)
	gasBid := place(u[2], topics.InclusionPreconf, slot, true, topics.OrderTypeLimit, "0.000000003", "300000")
	s.Accept(gasBid, false)
	s.Trade(gasBid, gasAsk, "0.000000002", 200000, 0)
	block := place(u[0], topics.WholeBlock, slot, false, topics.OrderTypeLimit, "0.5", "1")
	s.Accept(block, true)
	mkt := place(u[3], topics.WholeBlock, slot, true, topics.OrderTypeMarket, "0.6", "1")
	s.Accept(mkt, false)
	s.Trade(mkt, block, "0.5", 1, 800_000)
	resellGas := place(u[3], topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, "0.000000003", "50000")
	s.Accept(resellGas, false)
	s.Trade(resellGas, gasBid, "0.000000003", 50000, 0)
	s.Cancel(gasBid, false)
	rejected := place(u[4], topics.WholeBlock, slot, true, topics.OrderTypeLimit, "0.1", "1")
	s.Reject(rejected, topics.CodePassiveWouldTake)
	// Slot other: orders ingress never wrote, a system cancel of a
	// market order's remainder, and orders that expire.
	ask := s.Place(u[1], topics.InclusionPreconf, other, false, topics.OrderTypeLimit, "0.000000001", "1000")
	s.Accept(ask, true)
	sweep := place(u[4], topics.InclusionPreconf, other, true, topics.OrderTypeMarket, "0.000000002", "5000")
	s.Accept(sweep, false)
	s.Trade(sweep, ask, "0.000000001", 1000, 0)
	s.Cancel(sweep, true)
	bid := place(u[2], topics.InclusionPreconf, other, true, topics.OrderTypeLimit, "0.000000001", "2000")
	s.Accept(bid, true)
	ask2 := place(u[1], topics.InclusionPreconf, other, false, topics.OrderTypeLimit, "0.000000001", "700")
	s.Accept(ask2, false)
	s.Trade(ask2, bid, "0.000000001", 700, 0)
	ask3 := place(u[1], topics.InclusionPreconf, other, false, topics.OrderTypeLimit, "0.000000009", "900")
	s.Accept(ask3, true)
	s.Close(other, bid, ask3)
	s.Close(slot, gasAsk, resellGas)
	settlementtest.InsertOrders(t, h.pool, ingress...)
	return s
}

// TestArrivalOrdersGiveOneState applies one scenario in many orders of the
// three topics, batch sizes and duplicate deliveries, and finds the same
// final state every time, and an audit that passes.
func TestArrivalOrdersGiveOneState(t *testing.T) {
	base := newHarness(t, 5)
	s := scenario(t, base)
	base.apply(s.Records...)
	base.mustAudit()
	want := settlementtest.Snapshot(t, base.pool)

	byTopic := func(order ...string) []settlementtest.Record {
		var out []settlementtest.Record
		for _, topic := range order {
			out = append(out, s.Topic(topic)...)
		}
		return out
	}
	cases := []struct {
		name  string
		recs  []settlementtest.Record
		batch int
	}{
		{"fills, then order events, then market.open", byTopic(topics.Fills, topics.OrderEvents, topics.Orders), 3},
		{"order events, then fills, then market.open", byTopic(topics.OrderEvents, topics.Fills, topics.Orders), 4},
		{"market.open, order events, fills", byTopic(topics.Orders, topics.OrderEvents, topics.Fills), 1},
		{"order events, market.open, fills, one batch", byTopic(topics.OrderEvents, topics.Orders, topics.Fills), 1000},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 6 {
		cases = append(cases, struct {
			name  string
			recs  []settlementtest.Record
			batch int
		}{"interleaved with duplicates " + string(rune('a'+i)), interleave(rng, s, true), 1 + rng.IntN(7)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 5)
			scenario(t, h)
			parked := 0
			for recs := c.recs; len(recs) > 0; {
				n := min(c.batch, len(recs))
				parked += h.apply(recs[:n]...).Parked
				recs = recs[n:]
			}
			if got := settlementtest.Snapshot(t, h.pool); got != want {
				t.Fatalf("state differs from the one of log order:\n%s", settlementtest.Diff(got, want))
			}
			if c.recs[0].Topic == topics.Fills && parked == 0 {
				t.Error("fills before their market.open were not parked")
			}
			h.mustAudit()
		})
	}
}

// interleave merges the topics of s in a random order that keeps each
// topic's own order, as a consumer of three topics sees them; with dups,
// some records come again, right away or later.
func interleave(rng *rand.Rand, s *settlementtest.Stream, dups bool) []settlementtest.Record {
	queues := [][]settlementtest.Record{s.Topic(topics.Orders), s.Topic(topics.OrderEvents), s.Topic(topics.Fills)}
	var out []settlementtest.Record
	for {
		var open []int
		for i, q := range queues {
			if len(q) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		i := open[rng.IntN(len(open))]
		take := 1 + rng.IntN(len(queues[i]))
		for _, r := range queues[i][:take] {
			out = append(out, r)
			if dups && rng.IntN(5) == 0 {
				out = append(out, r)
			}
		}
		queues[i] = queues[i][take:]
	}
	if dups {
		for range len(out) / 4 {
			out = append(out, out[rng.IntN(len(out))])
		}
	}
	return out
}

// TestFillsWaitForTheirSlot: fills that arrive before their slot's
// market.open wait in parked_fills (the audit reports them once they wait
// too long) and are settled by the batch that issues the slot.
func TestFillsWaitForTheirSlot(t *testing.T) {
	h, s, seller, buyer := twoUsers(t)
	sell, buy := blockSale(s, seller, buyer, "1")
	settlementtest.InsertOrders(t, h.pool, sell, buy)
	if res := h.apply(s.Topic(topics.Fills)...); res.Parked != 1 || res.Fills != 0 {
		t.Fatalf("fill before its slot: %+v", res)
	}
	if res := h.apply(s.Topic(topics.OrderEvents)...); res.Fills != 0 || res.Released != 0 {
		t.Fatalf("events before market.open: %+v", res)
	}
	if _, err := h.pool.Exec(context.Background(), `UPDATE parked_fills SET parked_at = now() - interval '11 minutes'`); err != nil {
		t.Fatal(err)
	}
	if v := h.audit(); len(v) != 1 || v[0].Check != "fills do not wait long for their slot" {
		t.Fatalf("audit %v", v)
	}
	res := h.apply(s.Topic(topics.Orders)...)
	if res.Issued != 1 || res.Fills != 1 || res.Released != 2 {
		t.Fatalf("market.open: %+v", res)
	}
	if q, _, _, _ := h.position(buyer.Account, wb); !q.Equal(dec("1")) {
		t.Fatalf("buyer holds %s", q)
	}
	h.mustAudit()
}
