package settler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/internal/settlement"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// orderFlow is a random order flow on a few slots, as ingress would take
// it: each order's row and reservation written before its command.
type orderFlow struct {
	rng    *rand.Rand
	users  []settlementtest.Account
	slots  []uint64
	at     time.Time
	layout topics.SlotLayout
	orders []*settlementtest.Order
	// funds is what each user may still reserve.
	funds map[int64]decimal.Decimal
}

func newOrderFlow(t *testing.T, seed uint64, users []settlementtest.Account, funds string, slots ...uint64) *orderFlow {
	layout, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	f := &orderFlow{rng: rand.New(rand.NewPCG(seed, seed+1)), users: users, slots: slots, layout: layout,
		at: time.Now().Truncate(time.Millisecond), funds: map[int64]decimal.Decimal{}}
	for _, u := range users {
		f.funds[u.Account] = decimal.RequireFromString(funds)
	}
	return f
}

func (f *orderFlow) record(t *testing.T, slot uint64, e topics.Envelope, err error) *kgo.Record {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	r, err := kafka.NewSlotRecord(topics.Orders, f.layout, slot, e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *orderFlow) next() time.Time {
	f.at = f.at.Add(time.Millisecond)
	return f.at
}

// opens are the market.open commands of both families of every slot,
// sold by users[i] for slot i.
func (f *orderFlow) opens(t *testing.T) []*kgo.Record {
	var out []*kgo.Record
	for i, slot := range f.slots {
		seller := f.users[i%len(f.users)]
		for _, fam := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
			m := topics.MarketOpen{Slot: slot, Family: fam, SellerUserID: seller.User, SellerAccountID: seller.Account,
				TotalGas: 2_000_000, TotalPreconf: 1_000_000, BuyFeeRate: "0.001", PrimarySellFeeRate: "0.02", SecondarySellFeeRate: "0.005"}
			if fam == topics.WholeBlock {
				m.PriceStep, m.MinPrice, m.MaxPrice = "0.01", "0.01", "10"
			} else {
				m.PriceStep, m.MinPrice, m.MaxPrice = "0.000000001", "0.000000001", "0.000001"
				m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1000", "1000", "1000000"
			}
			e, err := m.Envelope(f.next())
			out = append(out, f.record(t, slot, e, err))
		}
	}
	return out
}

// commands returns n order commands (places of every type and side, some
// cancels, some republished) and the orders whose rows ingress wrote.
func (f *orderFlow) commands(t *testing.T, n int) ([]*kgo.Record, []*settlementtest.Order) {
	var recs []*kgo.Record
	var placed []*settlementtest.Order
	for range n {
		if len(f.orders) > 0 && f.rng.IntN(10) == 0 {
			o := f.orders[f.rng.IntN(len(f.orders))]
			c := topics.OrderCancel{UserID: o.Acc.User, AccountID: o.Acc.Account, InstrumentID: o.Instrument, OrderID: o.ID}
			e, err := topics.OrderCommandEnvelope(topics.TypeOrderCancel, fmt.Sprintf("cancel-%d-%d", o.ID, len(recs)), f.next(), c)
			recs = append(recs, f.record(t, o.Slot, e, err))
			continue
		}
		o := f.order()
		if o == nil {
			continue
		}
		placed = append(placed, o)
		f.orders = append(f.orders, o)
		p := topics.OrderPlace{OrderID: o.ID, UserID: o.Acc.User, AccountID: o.Acc.Account, InstrumentID: o.Instrument, Side: o.Buy,
			OrderType: o.Type, Quantity: o.Quantity.String(), Price: o.Price.String()}
		e, err := topics.OrderCommandEnvelope(topics.TypeOrderPlace, "place-"+strconv.FormatInt(o.ID, 10), f.next(), p)
		r := f.record(t, o.Slot, e, err)
		recs = append(recs, r)
		if f.rng.IntN(20) == 0 { // the outbox relay republishes it
			dup := *r
			recs = append(recs, &dup)
		}
	}
	return recs, placed
}

// order draws a new order, or nil when its buyer cannot reserve it.
func (f *orderFlow) order() *settlementtest.Order {
	slot := f.slots[f.rng.IntN(len(f.slots))]
	fam := topics.WholeBlock
	if f.rng.IntN(2) == 0 {
		fam = topics.InclusionPreconf
	}
	o := &settlementtest.Order{ID: int64(1000 + len(f.orders)), Acc: f.users[f.rng.IntN(len(f.users))], Instrument: topics.InstrumentID(fam, slot),
		Slot: slot, Family: fam, Buy: f.rng.IntN(2) == 0, Type: topics.OrderTypeLimit}
	switch f.rng.IntN(10) {
	case 0:
		o.Type = topics.OrderTypeMarket
	case 1:
		o.Type = topics.OrderTypeFillOrKill
	}
	k := int64(f.rng.IntN(8))
	if fam == topics.WholeBlock {
		o.Price, o.Quantity = decimal.New(50+k, -2), decimal.NewFromInt(1)
	} else {
		o.Price, o.Quantity = decimal.New(2+k, -9), decimal.NewFromInt(1000*int64(1+f.rng.IntN(30)))
	}
	if o.Buy {
		o.Reserved = settlementtest.Reservation(o.Price, o.Quantity, decimal.RequireFromString("0.001"))
		if f.funds[o.Acc.Account].LessThan(o.Reserved) {
			return nil
		}
		f.funds[o.Acc.Account] = f.funds[o.Acc.Account].Sub(o.Reserved)
	}
	return o
}

// closes are the trading_closed ticks of every slot.
func (f *orderFlow) closes(t *testing.T) []*kgo.Record {
	var out []*kgo.Record
	for _, slot := range f.slots {
		e, err := topics.ClockTick{Slot: slot, Kind: topics.TickTradingClosed}.Envelope(f.next())
		out = append(out, f.record(t, slot, e, err))
	}
	return out
}

// matcherGroup is the consumer group of the matcher the tests run.
const matcherGroup = "matcher"

// startMatcher runs the matcher's binary bin (instance settlement-test,
// static group member, so a restart takes its partitions back at once)
// until the test ends; transactions of 40 records and frequent snapshots
// make a kill land mid-stream and a restart rebuild from a snapshot.
func startMatcher(t *testing.T, bin string, brokers []string) *exec.Cmd {
	t.Helper()
	return proctest.Start(t, bin, "KAFKA_BROKERS="+brokers[0], "ADMIN_ADDR=127.0.0.1:0", "ENVIRONMENT=dev", "LOG_LEVEL=warn",
		"MATCHER_GROUP="+matcherGroup, "MATCHER_INSTANCE_ID=settlement-test", "MATCHER_STATIC_MEMBER=true",
		"MATCHER_MAX_BATCH=40", "MATCHER_SNAPSHOT_EVERY=300")
}

// matcherCommitted is how many orders records the matcher's group has
// committed, over all partitions.
func matcherCommitted(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	n, err := kafkatest.Committed(t.Context(), cl, matcherGroup, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// readTopics waits until the matcher has committed the whole of orders,
// which it does in the transactions that publish what the commands
// caused, then returns every record of orders, order events and fills
// that the settlement reads, up to the broker's end offsets, per topic in
// log order of its partitions.
func readTopics(t *testing.T, cl *kgo.Client) []settlementtest.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	kafkatest.WaitConsumed(ctx, t, cl, matcherGroup, topics.Orders)
	var out []settlementtest.Record
	for _, topic := range []string{topics.Orders, topics.OrderEvents, topics.Fills} {
		for _, r := range kafkatest.ReadToEnd(ctx, t, cl, topic) {
			if typ, _, _ := kafka.RecordType(r); !settlement.Wanted(r.Topic, typ) {
				continue
			}
			e, err := kafka.DecodeRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, settlementtest.Record{Topic: r.Topic, Envelope: e})
		}
	}
	return out
}

func tradingAudit(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	v, err := audit.Run(context.Background(), pool, 10, audit.Quiescent)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Fatalf("audit: %v", v)
	}
}

// TestSettlesTheMatchersOutputExactlyOnce runs the matcher's binary on a
// random order flow and the settler beside it; in the middle the matcher
// is killed with SIGKILL (whatever transaction it had open is aborted when
// it starts again) and so is the settler (client closed without
// committing, pool dropped); the matcher restarts and two settler
// instances continue, while duplicates of the matcher's records arrive.
// At the end every order is settled and released once, each row has its
// last event's state, the audit (exact locks included) passes, the same
// records applied directly in other topic orders give the same state, and
// the account feed holds every posting and the final state of every
// balance and position.
func TestSettlesTheMatchersOutputExactlyOnce(t *testing.T) {
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	users := settlementtest.Fund(t, pool, 6, "50")
	bin := proctest.Build(t, "../matcher/cmd/matcher")
	m := startMatcher(t, bin, b.Addrs())
	flow := newOrderFlow(t, 7, users, "50", 12_000_000, 12_000_001, 12_000_002)

	crashPool, err := postgres.Open(ctx, poolURL(t, pool), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crashCtx, crash := context.WithCancel(ctx)
	defer crash()
	s1, stop1 := startSettler(t, crashCtx, b.Addrs(), crashPool, 50)
	// Each settler's metrics, to hold against the trades once all ran.
	regs := []*prometheus.Registry{prometheus.NewRegistry()}
	if err := s1.RegisterMetrics(regs[0]); err != nil {
		t.Fatal(err)
	}
	produce(t, producer, flow.opens(t))
	for range 4 {
		cmds, placed := flow.commands(t, 150)
		settlementtest.InsertOrders(t, pool, placed...)
		produce(t, producer, cmds)
	}
	poll.Until(t, "some fills settled", func() bool { return count(t, pool, `SELECT count(*) FROM trades`) > 20 })

	// More commands, in chunks; once the matcher has committed some of
	// them, it and the settler are killed, and the rest arrive while
	// they are down.
	cmds, placed := flow.commands(t, 200)
	settlementtest.InsertOrders(t, pool, placed...)
	before := matcherCommitted(t, producer)
	const chunk = 25
	for i := 0; i < len(cmds); i += chunk {
		produce(t, producer, cmds[i:min(i+chunk, len(cmds))])
		if i == 2*chunk {
			poll.Until(t, "the matcher into the new commands", func() bool { return matcherCommitted(t, producer) > before })
			proctest.Kill(t, m)
			crash()
			stop1()
			crashPool.Close()
		}
	}
	settled := count(t, pool, `SELECT count(*) FROM trades`)
	produce(t, producer, flow.closes(t))
	startMatcher(t, bin, b.Addrs())
	var wg sync.WaitGroup
	var stats []func() int64
	var stops []func()
	for range 2 {
		s, stop := startSettler(t, ctx, b.Addrs(), pool, 300)
		regs = append(regs, prometheus.NewRegistry())
		if err := s.RegisterMetrics(regs[len(regs)-1]); err != nil {
			t.Fatal(err)
		}
		stats = append(stats, func() int64 { return s.TradingStats().Duplicates })
		stops = append(stops, stop)
	}
	poll.Until(t, "every order settled and released", func() bool {
		return count(t, pool, `SELECT count(*) FROM trading_slots WHERE phase >= 2`) == 3 &&
			count(t, pool, `SELECT count(*) FROM orders WHERE NOT released`) == 0
	})
	if n := count(t, pool, `SELECT count(*) FROM trades`); n <= settled {
		t.Fatalf("%d trades after the restart, %d before: the crash came after everything", n, settled)
	}
	// Caught up, the trading consumers show no lag: the commit marker
	// that ends each of the matcher's transactions takes an offset, and
	// they read past it.
	poll.Until(t, "the trading consumers' lag at 0, the matcher's commit markers read", func() bool {
		return tradingLagZero(t, regs[1:])
	})

	// The matcher's records again, as a producer retrying would send them.
	recs := readTopics(t, producer)
	var dups []*kgo.Record
	for i, r := range recs {
		if i%4 == 0 {
			rec, err := kafka.NewSlotRecord(r.Topic, flow.layout, slotOf(t, r.Envelope), r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			dups = append(dups, rec)
		}
	}
	state := settlementtest.Snapshot(t, pool)
	produce(t, producer, dups)
	poll.Until(t, "duplicates passed over", func() bool {
		return stats[0]()+stats[1]() > 0 && count(t, pool, `SELECT count(*) FROM account_feed`) == 0
	})
	for _, stop := range stops {
		wg.Go(stop)
	}
	wg.Wait()
	if got := settlementtest.Snapshot(t, pool); got != state {
		t.Fatalf("duplicates changed the state:\n%s", settlementtest.Diff(got, state))
	}
	// Only committed batches count: the fills the three settlers counted
	// are the trades, the duplicates those they passed over.
	var fills, passed float64
	for _, reg := range regs {
		got := metricstest.Gather(t, reg)
		fills += got[`settler_applied_total{consumer="trading",kind="fill"}`]
		passed += got[`settler_duplicates_total{consumer="trading"}`]
	}
	if n := count(t, pool, `SELECT count(*) FROM trades`); fills != float64(n) {
		t.Errorf("settler_applied_total of fills = %v, want the %d trades", fills, n)
	}
	if want := stats[0]() + stats[1](); passed < float64(want) || passed == 0 {
		t.Errorf("settler_duplicates_total = %v, want at least the %d the restarted settlers passed over", passed, want)
	}
	tradingAudit(t, pool)
	checkFees(t, pool)
	checkLastEvents(t, pool, recs)
	if n := count(t, pool, `SELECT count(*) FROM journal WHERE kind = 'trade.executed' AND status <> 'applied'`); n != 0 {
		t.Fatalf("%d fills refused", n)
	}

	for _, order := range [][]string{
		{topics.Fills, topics.OrderEvents, topics.Orders},
		{topics.OrderEvents, topics.Orders, topics.Fills},
	} {
		ref := pgtest.New(t, schema.Migrations())
		settlementtest.Fund(t, ref, len(users), "50")
		settlementtest.InsertOrders(t, ref, flow.orders...)
		var sorted []settlementtest.Record
		for _, topic := range order {
			for _, r := range recs {
				if r.Topic == topic {
					sorted = append(sorted, r)
				}
			}
		}
		applyDirect(t, ref, sorted, 97)
		if got := settlementtest.Snapshot(t, ref); got != state {
			t.Fatalf("topics applied in the order %v give another state:\n%s", order, settlementtest.Diff(got, state))
		}
	}
	checkFeed(t, producer, pool)
}

func slotOf(t *testing.T, e topics.Envelope) uint64 {
	t.Helper()
	var p struct {
		Slot uint64 `json:"slot"`
	}
	if err := e.UnmarshalData(&p); err != nil {
		t.Fatal(err)
	}
	return p.Slot
}

// applyDirect applies records through settlement.Apply in batches of n.
func applyDirect(t *testing.T, pool *pgxpool.Pool, recs []settlementtest.Record, n int) {
	t.Helper()
	ctx := context.Background()
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for len(recs) > 0 {
		k := min(n, len(recs))
		batch := make([]settlement.Record, k)
		for i, r := range recs[:k] {
			b, err := topics.Encode(r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			batch[i] = settlement.Decode(r.Topic, r.Envelope, b)
		}
		recs = recs[k:]
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := settlement.Apply(ctx, tx, sys, batch, quiet)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLastEvents compares each order row with the last event the matcher
// wrote about it.
func checkLastEvents(t *testing.T, pool *pgxpool.Pool, recs []settlementtest.Record) {
	t.Helper()
	last := map[int64]topics.OrderEvent{}
	for _, r := range recs {
		if r.Topic != topics.OrderEvents || r.Envelope.Type == topics.TypeMarketStatus || r.Envelope.Type == topics.TypeCancelRejected {
			continue
		}
		var ev topics.OrderEvent
		if err := r.Envelope.UnmarshalData(&ev); err != nil {
			t.Fatal(err)
		}
		last[ev.OrderID] = ev
	}
	if len(last) < 100 {
		t.Fatalf("only %d orders had events", len(last))
	}
	statuses := map[int]int{}
	for id, ev := range last {
		var status int
		var fulfilled decimal.Decimal
		if err := pool.QueryRow(context.Background(), `SELECT status, fulfilled FROM orders WHERE order_id = $1`, id).Scan(&status, &fulfilled); err != nil {
			t.Fatalf("order %d: %v", id, err)
		}
		if status != ev.Status || !fulfilled.Equal(decimal.RequireFromString(ev.Fulfilled)) {
			t.Errorf("order %d: status %d fulfilled %s, its last event says %d %s", id, status, fulfilled, ev.Status, ev.Fulfilled)
		}
		statuses[status]++
	}
	for _, s := range []int{topics.OrderStatusDone, topics.OrderStatusExpired, topics.OrderStatusError} {
		if statuses[s] == 0 {
			t.Errorf("no order ended with status %d (%v): the flow is too narrow", s, statuses)
		}
	}
}

// checkFeed reads account-events up to the broker's end offsets, once
// the settlers published every row of account_feed and stopped: every
// posting on a user account is there, and the highest version of each
// balance and position is the database's state.
func checkFeed(t *testing.T, cl *kgo.Client, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	postings := map[int64]bool{}
	balances := map[string]topics.BalanceChanged{}
	positions := map[string]topics.PositionChanged{}
	for _, r := range kafkatest.ReadToEnd(ctx, t, cl, topics.AccountEvents) {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case topics.TypeTransactionPosted:
			p, err := topics.DecodeTransactionPosted(e)
			if err != nil || string(r.Key) != strconv.FormatInt(p.UserID, 10) {
				t.Fatalf("posting %s key %s: %v", e.Data, r.Key, err)
			}
			postings[p.TrxID] = true
		case topics.TypeBalanceChanged:
			b, err := topics.DecodeBalanceChanged(e)
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprint(b.AccountID, "/", b.TokenID)
			if b.Version > balances[k].Version {
				balances[k] = b
			}
		case topics.TypePositionChanged:
			p, err := topics.DecodePositionChanged(e)
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprint(p.AccountID, "/", p.InstrumentID)
			if p.Version > positions[k].Version {
				positions[k] = p
			}
		}
	}
	rows, err := pool.Query(context.Background(), `SELECT p.posting_id FROM postings p JOIN journal j USING (entry_id)
		JOIN accounts a ON a.account_id = p.account_id WHERE j.kind = 'trade.executed' AND a.user_id IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		t.Fatalf("%d trade postings: %v", len(ids), err)
	}
	for _, id := range ids {
		if !postings[id] {
			t.Fatalf("posting %d is not in the feed", id)
		}
	}
	for k, b := range balances {
		var q, l decimal.Decimal
		if err := pool.QueryRow(context.Background(), `SELECT quantity, locked FROM account_balances WHERE account_id = $1 AND token_id = $2`,
			b.AccountID, b.TokenID).Scan(&q, &l); err != nil {
			t.Fatal(err)
		}
		if !q.Equal(decimal.RequireFromString(b.Quantity)) || !l.Equal(decimal.RequireFromString(b.Locked)) {
			t.Errorf("balance %s: feed %s/%s, database %s/%s", k, b.Quantity, b.Locked, q, l)
		}
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM positions p JOIN accounts a USING (account_id) WHERE a.user_id IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if len(positions) != n {
		t.Errorf("%d positions in the feed, %d in the database", len(positions), n)
	}
	for k, p := range positions {
		var q, l decimal.Decimal
		var expired bool
		if err := pool.QueryRow(context.Background(), `SELECT quantity, locked, expired FROM positions WHERE account_id = $1 AND instrument_id = $2`,
			p.AccountID, p.InstrumentID).Scan(&q, &l, &expired); err != nil {
			t.Fatal(err)
		}
		if !q.Equal(decimal.RequireFromString(p.Quantity)) || !l.Equal(decimal.RequireFromString(p.Locked)) || expired != p.Expired {
			t.Errorf("position %s: feed %+v, database %s/%s expired %v", k, p, q, l, expired)
		}
	}
}

// checkFees: what the fee account earned from trades equals the fees the
// trades record, and equals what the traders' type 15 postings paid.
func checkFees(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var earned, recorded, paid decimal.Decimal
	if err := pool.QueryRow(context.Background(), `
		SELECT
		  (SELECT coalesce(sum(p.amount), 0) FROM postings p JOIN journal j ON j.entry_id = p.entry_id
		     JOIN accounts a ON a.account_id = p.account_id WHERE a.type = 102 AND j.kind = 'trade.executed'),
		  (SELECT coalesce(sum(buyer_fee + seller_fee), 0) FROM trades),
		  (SELECT coalesce(-sum(p.amount), 0) FROM postings p JOIN accounts a ON a.account_id = p.account_id
		     WHERE p.type = 15 AND a.user_id IS NOT NULL)`).Scan(&earned, &recorded, &paid); err != nil {
		t.Fatal(err)
	}
	if !earned.IsPositive() || !earned.Equal(recorded) || !earned.Equal(paid) {
		t.Fatalf("fee account earned %s from trades; trades record %s of fees; traders paid %s", earned, recorded, paid)
	}
}

// tradingLagZero says whether the settlers of regs report the trading
// consumer's lag, and 0 on every partition.
func tradingLagZero(t *testing.T, regs []*prometheus.Registry) bool {
	t.Helper()
	series := 0
	for _, reg := range regs {
		for name, v := range metricstest.Gather(t, reg) {
			if strings.HasPrefix(name, `kafka_consumer_lag_records{group="settler-trading",`) {
				series++
				if v != 0 {
					return false
				}
			}
		}
	}
	return series > 0
}
