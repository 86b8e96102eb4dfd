package devstack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/settler"
	"blockspace.exchange/topics"
)

// outage is how long the broker stays dead in TestBrokerKilledWhileTrading.
const outage = 20 * time.Second

// crashLoad is what a client sent through ingress while a part of the
// system died, and what ingress answered. The client sends one request at
// a time, at most one every crashPace, and spends only what it has: a
// transfer or a withdrawal only while the ones acknowledged so far leave
// the current account enough for it, an order only while the trading
// account covers its reservation. So the load is bounded by the time a
// drill lasts and by the trader's funds, and however fast the machine
// sends, no request is refused for want of funds.
type crashLoad struct {
	orders      []int64         // acknowledged resting buys
	transfers   int             // acknowledged transfers of crashAmount, current to preconf
	withdrawals map[string]bool // acknowledged withdrawal request ids
	refused     map[int]int     // status → count of requests refused (never 200)
	unfunded    int             // requests not sent: the funds left did not cover them
	next        time.Time       // when the client may send again
}

func newCrashLoad() *crashLoad {
	return &crashLoad{withdrawals: map[string]bool{}, refused: map[int]int{}}
}

// crashFunds is what the load's trader holds in each of its current and
// trading accounts when the load starts: 10 deposited, 5 moved to trading.
var crashFunds = decimal.NewFromInt(5)

// crashAmount is each transfer's and each withdrawal's quantity, and
// crashFee the fee of a withdrawal to the dev chain (migration 0001).
var crashAmount, crashFee = decimal.RequireFromString("0.01"), decimal.RequireFromString("0.0001")

// crashPrice is the price of each resting buy; crashReserve bounds what one
// reserves, price × (1 + buy fee rate), the rate being below 1.
var crashPrice = decimal.RequireFromString("0.001")
var crashReserve = crashPrice.Mul(decimal.NewFromInt(2))

// crashPace is the least time between two requests of the load. A
// request through the gateway took about 200 ms on the 2-core
// development machine during a full test run, so there the pace changes
// nothing; a faster machine sends at most 20 a second.
const crashPace = 50 * time.Millisecond

// left is what the acknowledged requests leave in the current account
// and free in the trading account.
func (l *crashLoad) left() (current, preconf decimal.Decimal) {
	moved := crashAmount.Mul(decimal.NewFromInt(int64(l.transfers)))
	withdrawn := crashAmount.Add(crashFee).Mul(decimal.NewFromInt(int64(len(l.withdrawals))))
	reserved := crashReserve.Mul(decimal.NewFromInt(int64(len(l.orders))))
	return crashFunds.Sub(moved).Sub(withdrawn), crashFunds.Add(moved).Sub(reserved)
}

// covers reports whether the funds left pay for the i-th request.
func (l *crashLoad) covers(i int) bool {
	current, preconf := l.left()
	switch i % 3 {
	case 0:
		return preconf.GreaterThanOrEqual(crashReserve)
	case 1:
		return current.GreaterThanOrEqual(crashAmount)
	default:
		return current.GreaterThanOrEqual(crashAmount.Add(crashFee))
	}
}

// TestBrokerKilledWhileTrading kills the stack's Apache Kafka broker with
// SIGKILL while a client keeps placing orders, moving funds between its
// accounts and withdrawing, leaves it dead for 20 s, and starts it again on
// the same ports and data. Ingress answers every request as
// docs/operations.md says (accepted, or 503 with Retry-After while Kafka is
// known to be down; nothing else), and once the broker is back every
// acknowledged command has its effect exactly once: each acknowledged
// order was accepted by the matcher once and rests in the book, the
// trading account holds exactly the acknowledged transfers, the current
// account lost exactly the acknowledged transfers and withdrawals (with
// their fees), and the ledger audit, quiescent checks included, is clean.
func TestBrokerKilledWhileTrading(t *testing.T) {
	// Not parallel: with other stacks beside it on two cores, the stack
	// has been seen to stop serving during the outage, and then to hang
	// in its shutdown on a produce to the dead broker (not yet explained).
	broker := kafkatest.StartBroker(t)
	// Its own PostgreSQL cluster too, as the drill always had.
	s := startStackWith(t, worldTempDir(t), map[string]string{"KAFKA_BROKERS": strings.Join(broker.Addrs(), ","), "DATABASE_URL": ""})
	ctx := t.Context()
	c := client{t: t, base: s.Addresses().REST}
	tr := logIn(t, c, newWallet(t))
	s.fund(tr, 1, "10", "5")
	instrument := lastingMarket(t, c, outage+90*time.Second)

	load := newCrashLoad()
	for i := range 9 {
		load.send(t, tr, instrument, i)
	}
	if err := broker.Node().Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i := 9; time.Since(killed) < outage; i++ {
		load.send(t, tr, instrument, i)
	}
	if err := broker.Node().Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		load.send(t, tr, instrument, i)
	}
	t.Logf("acknowledged %d orders, %d transfers, %d withdrawals; refused %v, %d not covered by the funds left",
		len(load.orders), load.transfers, len(load.withdrawals), load.refused, load.unfunded)
	if load.refused[503] == 0 {
		t.Errorf("no request was refused with 503 during a %s outage: ingress never noticed Kafka was gone", outage)
	}

	load.waitApplied(t, s.pool, tr)
	load.checkMatcherAcceptedOnce(t, broker.Client(t))
	if v, err := settler.AuditQuiescent(ctx, s.pool, 10); err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}

// lastingMarket is an open whole-block market whose trading closes no
// sooner than life from now (its open orders expire then), longer than
// the test runs.
func lastingMarket(t *testing.T, c client, life time.Duration) string {
	t.Helper()
	var slot uint64
	poll.Until(t, "an open whole-block market", func() bool {
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if m.Status == topics.MarketStatusOpen && time.UnixMilli(m.MaturityTime).After(time.Now().Add(life)) {
				slot = max(slot, m.Slot)
			}
		}
		return slot != 0
	})
	return topics.InstrumentID(topics.WholeBlock, slot)
}

// send makes the i-th request of the load: a resting buy, a transfer or a
// withdrawal, in turn, and records what ingress answered; a request the
// funds left do not cover is not sent. Any answer but an acceptance or a
// 503 with Retry-After fails the test.
func (l *crashLoad) send(t *testing.T, tr *trader, instrument string, i int) {
	t.Helper()
	time.Sleep(time.Until(l.next))
	l.next = time.Now().Add(crashPace)
	if !l.covers(i) {
		l.unfunded++
		return
	}
	var a answer
	switch i % 3 {
	case 0:
		a = tr.send("POST", "/api/v1/wholeblock/order", map[string]any{"accountId": tr.preconf, "instrumentId": instrument,
			"side": true, "orderType": 2, "quantity": "1", "price": crashPrice.String()})
	case 1:
		a = tr.c.do("POST", "/api/v1/user/account/transfer/token", url.Values{"fromAccountId": {fmt.Sprint(tr.current)},
			"toAccountId": {fmt.Sprint(tr.preconf)}, "tokenId": {"1"}, "quantity": {crashAmount.String()}}, tr.auth)
	case 2:
		a = tr.send("POST", "/api/v1/user/funding/withdraw", []map[string]any{{"accountId": tr.current, "chainId": 1337, "tokenId": 1, "quantity": crashAmount.String()}})
	}
	if a.status != 200 {
		if a.status != 503 || a.header.Get("Retry-After") == "" {
			t.Fatalf("request %d answered %d (Retry-After %q): %s", i, a.status, a.header.Get("Retry-After"), a.raw)
		}
		l.refused[a.status]++
		// A client backs off as Retry-After asks, if not for all of it.
		time.Sleep(100 * time.Millisecond)
		return
	}
	if !a.body.Success {
		t.Fatalf("request %d answered 200 without success: %s", i, a.raw)
	}
	switch i % 3 {
	case 0:
		var placed struct{ Orders []map[string]any }
		if json.Unmarshal(a.body.Data, &placed) != nil || len(placed.Orders) != 1 || placed.Orders[0]["errorCode"] != nil {
			t.Fatalf("order %d: %s", i, a.raw)
		}
		l.orders = append(l.orders, int64(placed.Orders[0]["orderId"].(float64)))
	case 1:
		l.transfers++
	case 2:
		var w struct {
			Submitted []json.Number `json:"submittedRequestIds"`
		}
		if json.Unmarshal(a.body.Data, &w) != nil || len(w.Submitted) != 1 {
			t.Fatalf("withdrawal %d: %s", i, a.raw)
		}
		l.withdrawals[w.Submitted[0].String()] = true
	}
}

// waitApplied waits until the settler has applied every acknowledged
// command, then checks that it applied each exactly once.
func (l *crashLoad) waitApplied(t *testing.T, pool *pgxpool.Pool, tr *trader) {
	t.Helper()
	moved := crashAmount.Mul(decimal.NewFromInt(int64(l.transfers)))
	wantPreconf := crashFunds.Add(moved)
	withdrawn := crashAmount.Add(crashFee).Mul(decimal.NewFromInt(int64(len(l.withdrawals))))
	wantCurrent := crashFunds.Sub(moved).Sub(withdrawn)
	poll.Until(t, "every acknowledged order resting in the book", func() bool {
		var resting int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE order_id = ANY($1) AND status = $2`,
			l.orders, topics.OrderStatusOnBook).Scan(&resting)
		return err == nil && resting == len(l.orders)
	})
	poll.Until(t, "every acknowledged transfer and withdrawal applied", func() bool {
		return tr.balance(tr.preconf).Quantity.Equal(wantPreconf) && tr.balance(tr.current).Quantity.Equal(wantCurrent)
	})
	var debited int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM withdraw_requests WHERE user_id = $1`, tr.user).Scan(&debited); err != nil {
		t.Fatal(err)
	}
	if debited != len(l.withdrawals) {
		t.Fatalf("%d withdrawal requests stored, %d acknowledged", debited, len(l.withdrawals))
	}
}

// checkMatcherAcceptedOnce reads the matcher's order events until each
// acknowledged order's acceptance is there, and checks that each was
// accepted exactly once, however often the outbox published its command.
func (l *crashLoad) checkMatcherAcceptedOnce(t *testing.T, cl *kgo.Client) {
	t.Helper()
	var accepted map[int64]int
	poll.Until(t, "the matcher's acceptance of every acknowledged order", func() bool {
		accepted = acceptances(t, cl)
		for _, id := range l.orders {
			if accepted[id] == 0 {
				return false
			}
		}
		return true
	})
	for _, id := range l.orders {
		if accepted[id] != 1 {
			t.Errorf("order %d accepted %d times by the matcher, want once", id, accepted[id])
		}
	}
}

// acceptances counts the order.accepted events of each order on the
// order-events topic.
func acceptances(t *testing.T, cl *kgo.Client) map[int64]int {
	t.Helper()
	accepted := map[int64]int{}
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderEvents) {
		env, err := topics.Decode(r.Value)
		if err != nil || env.Type != topics.TypeOrderAccepted {
			continue
		}
		var e topics.OrderEvent
		if err := json.Unmarshal(env.Data, &e); err != nil {
			t.Fatal(err)
		}
		accepted[e.OrderID]++
	}
	return accepted
}
