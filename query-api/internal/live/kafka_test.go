package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

// broker is a real Kafka broker of the test's own with the catalog's
// topics.
type broker struct {
	t      testing.TB
	cfg    kafka.Config
	cl     *kgo.Client
	layout topics.SlotLayout
	n      int
}

func startBroker(t testing.TB) *broker {
	t.Helper()
	cl, addrs := kafkatest.Start(t)
	layout, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	return &broker{t: t, cfg: kafka.Config{Brokers: addrs, ClientID: "live-test"}, cl: cl, layout: layout}
}

// slotRecord produces a record about slot on a slot-partitioned topic.
func (b *broker) slotRecord(topic string, slot uint64, typ string, payload any) {
	b.t.Helper()
	b.n++
	e, err := topics.NewEnvelope(typ, 1, fmt.Sprintf("%s:%d", typ, b.n), time.Now(), payload)
	if err != nil {
		b.t.Fatal(err)
	}
	r, err := kafka.NewSlotRecord(topic, b.layout, slot, e)
	if err != nil {
		b.t.Fatal(err)
	}
	b.produce(r)
}

func (b *broker) produce(r *kgo.Record) {
	b.t.Helper()
	if err := b.cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		b.t.Fatal(err)
	}
}

// feed runs the market feed of h's model from b until the test ends.
func (b *broker) feed(h *harness) {
	b.t.Helper()
	f, err := markets.NewFeed(b.cfg, time.Now().Add(-time.Hour), h.model, slog.Default())
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			b.t.Errorf("market feed Run: %v", err)
		}
	})
}

func (b *broker) openMarket(slot uint64, f topics.Family) {
	b.t.Helper()
	o := topics.MarketOpen{Slot: slot, Family: f, PriceStep: "0.000000001", MinPrice: "0.000000001", MaxPrice: "0.000001",
		QuantityStep: "1000", MinQuantity: "21000", MaxQuantity: "18000000", SellerUserID: 1, SellerAccountID: 2,
		TotalGas: 36_000_000, TotalPreconf: 18_000_000}
	b.slotRecord(topics.Orders, slot, topics.TypeMarketOpen, o)
	b.slotRecord(topics.OrderEvents, slot, topics.TypeMarketStatus, topics.MarketStatus{InstrumentID: topics.InstrumentID(f, slot),
		Slot: slot, MarketID: topics.MarketID(f, slot), Status: topics.MarketStatusOpen, AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000})
}

// restingOrder is the test's own record of an order on the book.
type restingOrder struct {
	buy         bool
	price       int64
	qty, filled int64
}

// A client that subscribes in the middle of a random order stream, read
// from Kafka by the market feed, ends with exactly the book the resting
// orders make: the snapshot plus every update, in sequence.
func TestBookOverKafkaReproducesTheBook(t *testing.T) {
	b := startBroker(t)
	h := newHarness(t, Config{RequestRate: 1000, RequestBurst: 1000}, nil)
	const slot = 40
	id := topics.InstrumentID(topics.InclusionPreconf, slot)
	b.openMarket(slot, topics.InclusionPreconf)
	b.feed(h)

	rng := rand.New(rand.NewPCG(7, 11))
	live := map[int64]*restingOrder{}
	emit := func(oid int64, o *restingOrder, typ string, status int) {
		ev := orderEvent(1+oid%4, oid, id, o.buy, decimal.New(o.price, -9).String(), strconv.FormatInt(o.qty, 10),
			strconv.FormatInt(o.filled, 10), status)
		b.slotRecord(topics.OrderEvents, slot, typ, ev)
	}
	step := func(i int) {
		ids := make([]int64, 0, len(live))
		for k := range live {
			ids = append(ids, k)
		}
		sort.Slice(ids, func(a, c int) bool { return ids[a] < ids[c] })
		switch r := rng.IntN(10); {
		case r < 5 || len(ids) == 0:
			o := &restingOrder{buy: rng.IntN(2) == 0, price: 20 + rng.Int64N(10), qty: 1000 * (21 + rng.Int64N(20))}
			if !o.buy {
				o.price += 10 // keep the sides apart: this test is about sequencing, not matching
			}
			live[int64(i)] = o
			emit(int64(i), o, topics.TypeOrderAccepted, topics.OrderStatusOnBook)
		case r < 8:
			oid := ids[rng.IntN(len(ids))]
			o := live[oid]
			o.filled += min(1000*(1+rng.Int64N(10)), o.qty-o.filled)
			status := topics.OrderStatusPartiallyFilled
			if o.filled == o.qty {
				status = topics.OrderStatusDone
				delete(live, oid)
			}
			emit(oid, o, topics.TypeOrderFilled, status)
		default:
			oid := ids[rng.IntN(len(ids))]
			emit(oid, live[oid], topics.TypeOrderCancelled, topics.OrderStatusCancelledByUser)
			delete(live, oid)
		}
	}
	for i := 1; i <= 150; i++ {
		step(i)
	}
	poll.Until(t, "the market's book in the model", func() bool {
		var ok bool
		h.model.View(func(v markets.View) { _, ok = v.Book(id) })
		return ok
	})
	c := h.dial(nil)
	c.subscribe(map[string]string{"channel": "orderBookUpdate", "marketType": "inclusionPreconf", "instrumentId": id})
	c.expect("subscribe", 0)
	book := clientBook{}
	book.load(t, decodeP[markets.Book](t, c.next()))
	for i := 151; i <= 400; i++ {
		step(i)
	}
	want := expectedBook(live)
	var final markets.Book
	poll.Until(t, "the model's book after the last step", func() bool {
		h.model.View(func(v markets.View) { final, _ = v.Book(id) })
		return sameBook(final, want)
	})
	for book.seq < final.Seq {
		for _, m := range c.upTo() {
			book.apply(t, decodeP[markets.BookUpdate](t, m))
		}
	}
	if got := book.view(); !sameBook(got, want) {
		t.Fatalf("client book\n %+v\nwant\n %+v", got, want)
	}
}

// clientBook applies snapshots and updates the way docs/websocket.md tells
// clients to.
type clientBook struct {
	seq    uint64
	levels [2]map[string]markets.Level
}

func (cb *clientBook) load(t *testing.T, b markets.Book) {
	cb.seq = b.Seq
	cb.levels = [2]map[string]markets.Level{{}, {}}
	cb.put(0, b.Bids)
	cb.put(1, b.Asks)
}

func (cb *clientBook) apply(t *testing.T, u markets.BookUpdate) {
	t.Helper()
	if u.Seq != cb.seq+1 {
		t.Fatalf("update %d after %d: a gap", u.Seq, cb.seq)
	}
	cb.seq = u.Seq
	cb.put(0, u.Bids)
	cb.put(1, u.Asks)
}

func (cb *clientBook) put(side int, ls []markets.Level) {
	for _, l := range ls {
		if l.Quantity == "0" {
			delete(cb.levels[side], l.Price)
		} else {
			cb.levels[side][l.Price] = l
		}
	}
}

func (cb *clientBook) view() markets.Book {
	var b markets.Book
	for side, out := range [2]*[]markets.Level{&b.Bids, &b.Asks} {
		for _, l := range cb.levels[side] {
			*out = append(*out, l)
		}
	}
	return b
}

func expectedBook(live map[int64]*restingOrder) markets.Book {
	lv := [2]map[string]*markets.Level{{}, {}}
	for _, o := range live {
		side := 1
		if o.buy {
			side = 0
		}
		p := decimal.New(o.price, -9).String()
		l := lv[side][p]
		if l == nil {
			l = &markets.Level{Price: p, Quantity: "0"}
			lv[side][p] = l
		}
		q, _ := strconv.ParseInt(l.Quantity, 10, 64)
		l.Quantity = strconv.FormatInt(q+o.qty-o.filled, 10)
		l.Orders++
	}
	var b markets.Book
	for side, out := range [2]*[]markets.Level{&b.Bids, &b.Asks} {
		for _, l := range lv[side] {
			*out = append(*out, *l)
		}
	}
	return b
}

// sameBook compares levels regardless of order.
func sameBook(a, b markets.Book) bool {
	for _, pair := range [2][2][]markets.Level{{a.Bids, b.Bids}, {a.Asks, b.Asks}} {
		if len(pair[0]) != len(pair[1]) {
			return false
		}
		m := map[markets.Level]bool{}
		for _, l := range pair[0] {
			m[l] = true
		}
		for _, l := range pair[1] {
			if !m[l] {
				return false
			}
		}
	}
	return true
}

// The account feed reaches only the owner's sockets, drops repeated ids
// and older versions, and drops a record whose payload names another user
// than its key.
func TestAccountFeedIsPrivate(t *testing.T) {
	b := startBroker(t)
	h := newHarness(t, Config{RequestRate: 1000, RequestBurst: 1000}, nil)
	feed, err := NewAccountFeed(b.cfg, h.srv.Hub(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- feed.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("account feed Run: %v", err)
		}
	})

	alice, bob := h.dial(nil), h.dial(nil)
	for i, c := range []*client{alice, bob} {
		c.login(h.token(int64(i+1), time.Now().Add(time.Hour)))
		c.subscribe(map[string]string{"channel": "accountBalanceUpdate"},
			map[string]string{"channel": "positionUpdate", "marketType": "wholeBlock"})
		c.expect("subscribe", 0)
		c.expect("subscribe", 0)
	}
	record := func(key int64, payload any) {
		t.Helper()
		e, err := topics.AccountEnvelope(time.Now(), payload)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewRecord(topics.AccountEvents, []byte(strconv.FormatInt(key, 10)), e)
		if err != nil {
			t.Fatal(err)
		}
		b.produce(r)
	}
	balance := func(user, version int64, qty string) topics.BalanceChanged {
		return topics.BalanceChanged{UserID: user, AccountID: user * 10, TokenID: 1, Quantity: qty, Locked: "0", Available: qty, Version: version}
	}
	// The feed starts at the end of the topic: send alice probes, each a
	// newer version, until one reaches her. Then send a last probe and
	// read up to it: the probes before it are on its partition, so each
	// one is delivered (or dropped) before it, and none comes after.
	var probe int64
	probed := func(version int64) bool {
		reached := false
		for _, m := range alice.upTo() {
			b := decodeP[topics.BalanceChanged](t, m)
			if m.E != ChannelBalances || b.Quantity != "1" {
				t.Fatalf("alice got %s while probing", m.raw)
			}
			reached = reached || b.Version >= version
		}
		return reached
	}
	poll.Until(t, "a probe to reach alice", func() bool {
		probe++
		record(1, balance(1, probe, "1"))
		return probed(0)
	})
	probe++
	record(1, balance(1, probe, "1"))
	poll.Until(t, "the last probe to reach alice", func() bool { return probed(probe) })
	record(1, balance(1, 1000, "5"))
	record(1, balance(1, 1000, "5"))  // the same record again
	record(1, balance(1, 999, "4"))   // an older state
	record(2, balance(1, 2000, "66")) // key and payload disagree
	record(2, balance(2, 1000, "7"))
	record(2, topics.PositionChanged{UserID: 2, AccountID: 20, InstrumentID: "ETH-WB-7", MarketID: topics.MarketID(topics.WholeBlock, 7),
		Slot: 7, Quantity: "1", Locked: "0", Available: "1", Version: 1000})
	record(2, topics.PositionChanged{UserID: 2, AccountID: 20, InstrumentID: "ETH-PC-7", MarketID: topics.MarketID(topics.InclusionPreconf, 7),
		Slot: 7, Quantity: "21000", Locked: "0", Available: "21000", Version: 1000}) // not subscribed: inclusionPreconf
	record(1, balance(1, 1001, "8"))

	want := map[*client][]string{alice: {"5", "8"}, bob: {"7", "position:1"}}
	for c, quantities := range want {
		var got []string
		poll.Until(t, fmt.Sprintf("%d account events of a user", len(quantities)), func() bool {
			for _, m := range c.upTo() {
				if m.E == ChannelPositions {
					got = append(got, "position:"+decodeP[topics.PositionChanged](t, m).Quantity)
				} else if m.E == ChannelBalances {
					got = append(got, decodeP[topics.BalanceChanged](t, m).Quantity)
				}
			}
			return len(got) >= len(quantities)
		})
		if fmt.Sprint(got) != fmt.Sprint(quantities) {
			t.Fatalf("got %v, want %v", got, quantities)
		}
	}
	// Everything produced was read: the partitions it went to show no lag.
	reg := prometheus.NewRegistry()
	reg.MustRegister(feed.Lag())
	var lags map[string]float64
	poll.Before(t, "the feed's lag to reach 0", time.Now().Add(poll.Timeout), func() bool {
		lags = metricstest.Prefixed(metricstest.Gather(t, reg), `kafka_consumer_lag_records{group="live-test",`)
		for _, v := range lags {
			if v != 0 {
				return false
			}
		}
		return len(lags) >= 1 && len(lags) <= 2 // alice's and bob's partitions
	}, func() string { return metricstest.Dump(lags) })
}
