package ingress_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

// matcherStandIn writes order-events in Kafka transactions, as the
// matcher does, so that a test decides what the matcher answered.
type matcherStandIn struct {
	h  *harness
	cl *kgo.Client
	n  int
}

func newMatcherStandIn(h *harness) *matcherStandIn {
	h.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.TransactionalID(fmt.Sprintf("stand-in-%d", time.Now().UnixNano())),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(cl.Close)
	return &matcherStandIn{h: h, cl: cl}
}

// write produces the payloads of one command about slot in one
// transaction, committed or aborted.
func (m *matcherStandIn) write(slot uint64, commit bool, events ...typed) {
	t := m.h.t
	t.Helper()
	ctx := t.Context()
	layout, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		m.n++
		e, err := topics.NewEnvelope(ev.typ, topics.MatcherEventVersion, fmt.Sprintf("oe:%d:%d", slot, m.n), time.Now(), ev.payload)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewSlotRecord(topics.OrderEvents, layout, slot, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// typed is an event payload with its type.
type typed struct {
	typ     string
	payload any
}

// replica starts another ingress service on h's database and broker, as
// replicas of ingress run, with options of its own; it runs until t ends.
func (h *harness) replica(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: h.brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	r := &harness{t: t, pool: h.pool, broker: h.broker, brokers: h.brokers, kcl: cl, key: h.key, signer: h.signer}
	r.startService(o)
	r.waitReady()
	return r
}

// commandFeed follows the orders topic from its start with one client of
// its own, so that waiting for a command costs the fetches that bring it
// and not a read of the whole topic.
type commandFeed struct {
	cl *kgo.Client
	// unread are the commands read and not yet handed out, by type, in
	// the order they came.
	unread map[string][]*kgo.Record
}

func newCommandFeed(h *harness) *commandFeed {
	h.t.Helper()
	cl, err := kafka.NewReader(h.kcl, kgo.ConsumeTopics(topics.Orders), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(cl.Close)
	return &commandFeed{cl: cl, unread: map[string][]*kgo.Record{}}
}

// nextCommand returns the envelope and payload of the first command of
// typ that f has not handed out yet, reading on until one comes.
func nextCommand[T any](t testing.TB, f *commandFeed, typ string) (topics.Envelope, T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), poll.Timeout)
	defer cancel()
	for len(f.unread[typ]) == 0 {
		fetches := f.cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no new %s command: %v", typ, err)
		}
		if err := fetches.Err(); err != nil {
			t.Fatalf("read %s: %v", topics.Orders, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			got, _, _ := kafka.RecordType(r)
			f.unread[got] = append(f.unread[got], r)
		})
	}
	r := f.unread[typ][0]
	f.unread[typ] = f.unread[typ][1:]
	return decodeCommand[T](t, r)
}

// TestAnswersCarryTheMatchersDecision: a place or cancel answer waits for
// the matcher's decision on order-events and shows it once the
// transaction that carries it commits; an aborted transaction is never
// shown, and without a decision in time the answer is the pending one.
// Answers wait for a decision as long as a test waits for anything
// (poll.Timeout), so the stand-in's decisions are never late however slow
// the machine; the pending answer is shown by a replica of the service
// that waits briefly for a decision that never comes.
func TestAnswersCarryTheMatchersDecision(t *testing.T) {
	h := newMarketsHarness(t, harnessOptions{orders: ingress.OrderEntryConfig{AnswerWait: poll.Timeout}})
	m := newMatcherStandIn(h)
	feed := newCommandFeed(h)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "0")
	h.fund(u.preconf, "10")

	// placeDecided places body for u on h in the background and, once
	// ingress has published the command, has decide answer it.
	placeDecided := func(t *testing.T, h *harness, feed *commandFeed, u user, body string, decide func(topics.Envelope, topics.OrderPlace)) map[string]any {
		t.Helper()
		answered := make(chan answer, 1)
		go func() { answered <- h.place(u, topics.WholeBlock, body) }()
		e, cmd := nextCommand[topics.OrderPlace](t, feed, topics.TypeOrderPlace)
		decide(e, cmd)
		list := orders(t, <-answered)
		if len(list) != 1 || list[0]["orderId"] != float64(cmd.OrderID) {
			t.Fatalf("answer %v for order %d", list, cmd.OrderID)
		}
		return list[0]
	}
	event := func(e topics.Envelope, cmd topics.OrderPlace, status int, fulfilled string) topics.OrderEvent {
		return topics.OrderEvent{CommandID: e.ID, OrderID: cmd.OrderID, UserID: cmd.UserID, AccountID: cmd.AccountID,
			MarketID: topics.MarketID(topics.WholeBlock, slotOpen), InstrumentID: wbOpen, Slot: slotOpen, Side: cmd.Side,
			OrderType: cmd.OrderType, Price: cmd.Price, Quantity: cmd.Quantity, Fulfilled: fulfilled, Status: status}
	}

	t.Run("filled: the fill, its fee and price", func(t *testing.T) {
		got := placeDecided(t, h, feed, u, order(u.preconf, wbOpen, true, 2, "1", "0.5", ""), func(e topics.Envelope, cmd topics.OrderPlace) {
			// What an aborted transaction said never reaches the answer.
			code := topics.CodeInsufficientPosition
			rejected := event(e, cmd, topics.OrderStatusError, "0")
			rejected.ErrorCode = &code
			m.write(slotOpen, false, typed{topics.TypeOrderRejected, rejected})
			filled := event(e, cmd, topics.OrderStatusDone, "1")
			filled.TradeID, filled.LastPrice, filled.LastQuantity, filled.LastFee, filled.LastPreconfQuantity = 77, "0.5", "1", "0.0005", "18000000"
			m.write(slotOpen, true, typed{topics.TypeOrderAccepted, event(e, cmd, topics.OrderStatusPending, "0")},
				typed{topics.TypeOrderFilled, filled})
		})
		if got["status"] != float64(topics.OrderStatusDone) || got["fulfilled"] != "1" || got["fees"] != "0.0005" ||
			got["averageTradePrice"] != "0.5" || got["preconfQuantity"] != "18000000" || got["errorCode"] != nil {
			t.Fatalf("answer %v, want status 10 filled at 0.5 with fee 0.0005", got)
		}
	})
	t.Run("rejected: the matcher's code and message", func(t *testing.T) {
		got := placeDecided(t, h, feed, u, order(u.preconf, wbOpen, false, 2, "1", "0.9", ""), func(e topics.Envelope, cmd topics.OrderPlace) {
			code := topics.CodeInsufficientPosition
			rejected := event(e, cmd, topics.OrderStatusError, "0")
			rejected.ErrorCode, rejected.Message = &code, "no position to sell"
			m.write(slotOpen, true, typed{topics.TypeOrderRejected, rejected})
		})
		if got["status"] != float64(topics.OrderStatusError) || got["errorCode"] != float64(topics.CodeInsufficientPosition) || got["message"] != "no position to sell" {
			t.Fatalf("answer %v, want status 99 code 125", got)
		}
	})
	var resting int64
	t.Run("resting", func(t *testing.T) {
		got := placeDecided(t, h, feed, u, order(u.preconf, wbOpen, true, 2, "1", "0.1", ""), func(e topics.Envelope, cmd topics.OrderPlace) {
			m.write(slotOpen, true, typed{topics.TypeOrderAccepted, event(e, cmd, topics.OrderStatusOnBook, "0")})
		})
		if got["status"] != float64(topics.OrderStatusOnBook) || got["fees"] != "0" || got["averageTradePrice"] != nil {
			t.Fatalf("answer %v, want status 1", got)
		}
		resting = int64(got["orderId"].(float64))
	})
	t.Run("no decision in time: pending", func(t *testing.T) {
		replica := h.replica(t, harnessOptions{orders: ingress.OrderEntryConfig{AnswerWait: 10 * time.Millisecond}})
		got := placeDecided(t, replica, feed, u, order(u.preconf, wbOpen, true, 2, "1", "0.2", ""), func(topics.Envelope, topics.OrderPlace) {})
		if got["status"] != float64(topics.OrderStatusPending) || got["fulfilled"] != "0" {
			t.Fatalf("answer %v, want status 0", got)
		}
	})
	cancel := func(t *testing.T, orderID int64, decide func(e topics.Envelope, cmd topics.OrderCancel)) map[string]any {
		t.Helper()
		answered := make(chan answer, 1)
		go func() {
			answered <- h.cancel(u, topics.WholeBlock, "cancel-order",
				fmt.Sprintf(`{"accountId": %d, "instrumentId": %q, "orderId": %d}`, u.preconf, wbOpen, orderID))
		}()
		e, cmd := nextCommand[topics.OrderCancel](t, feed, topics.TypeOrderCancel)
		if cmd.OrderID != orderID {
			t.Fatalf("cancel command for order %d, want %d", cmd.OrderID, orderID)
		}
		decide(e, cmd)
		items := cancelItems(t, <-answered)
		if len(items) != 1 {
			t.Fatalf("items %v", items)
		}
		return items[0]
	}
	t.Run("cancel refused by the matcher", func(t *testing.T) {
		got := cancel(t, resting, func(e topics.Envelope, cmd topics.OrderCancel) {
			m.write(slotOpen, true, typed{topics.TypeCancelRejected, topics.CancelRejected{CommandID: e.ID, UserID: u.id,
				AccountID: u.preconf, InstrumentID: wbOpen, OrderID: cmd.OrderID, Code: topics.CodeOrderDone, Message: "order is done"}})
		})
		if got["code"] != float64(topics.CodeOrderDone) || got["status"] != nil || got["message"] != "order is done" {
			t.Fatalf("item %v, want code 109", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		got := cancel(t, resting, func(e topics.Envelope, cmd topics.OrderCancel) {
			code := topics.CodeManuallyCancelled
			ev := topics.OrderEvent{CommandID: e.ID, OrderID: cmd.OrderID, UserID: u.id, AccountID: u.preconf, InstrumentID: wbOpen,
				Slot: slotOpen, Side: true, OrderType: 2, Quantity: "1", Fulfilled: "0", Status: topics.OrderStatusCancelledByUser, ErrorCode: &code}
			m.write(slotOpen, true, typed{topics.TypeOrderCancelled, ev})
		})
		if got["code"] != float64(topics.CodeCancelled) || got["status"] != float64(topics.OrderStatusCancelledByUser) {
			t.Fatalf("item %v, want code 1 and status 11", got)
		}
	})
}

// ORDER_ANSWER_WAIT: unset waits 200ms, 0 never waits, a bad value is
// an error naming the variable.
func TestOrderAnswerWaitFromEnv(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want time.Duration
		err  bool
	}{{"", 200 * time.Millisecond, false}, {"50ms", 50 * time.Millisecond, false}, {"0", -1, false}, {"0s", -1, false},
		{"-1s", 0, true}, {"6s", 0, true}, {"soon", 0, true}} {
		env := map[string]string{}
		if tc.raw != "" {
			env["ORDER_ANSWER_WAIT"] = tc.raw
		}
		r := config.FromMap(env)
		got := ingress.ConfigFromEnv(r).Orders.AnswerWait
		if err := r.Err(); tc.err != (err != nil) || (err != nil && !strings.Contains(err.Error(), "ORDER_ANSWER_WAIT")) {
			t.Errorf("%q: error %v", tc.raw, err)
		}
		if !tc.err && got != tc.want {
			t.Errorf("%q: wait %s, want %s", tc.raw, got, tc.want)
		}
	}
}
