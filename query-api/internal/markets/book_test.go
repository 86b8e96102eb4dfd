package markets

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// recorder keeps what the model published.
type recorder struct {
	books   []BookUpdate
	tickers []Ticker
	trades  []Trade
	orders  []OrderUpdate
	markets []MarketChange
}

func (r *recorder) BookChanged(u BookUpdate)     { r.books = append(r.books, u) }
func (r *recorder) TickerChanged(t Ticker)       { r.tickers = append(r.tickers, t) }
func (r *recorder) Traded(t Trade)               { r.trades = append(r.trades, t) }
func (r *recorder) OrderChanged(u OrderUpdate)   { r.orders = append(r.orders, u) }
func (r *recorder) MarketChanged(c MarketChange) { r.markets = append(r.markets, c) }

// liveOrder is the test's own idea of an order resting on the book.
type liveOrder struct {
	buy         bool
	price       int64 // in steps of 1 gwei
	qty, filled int64
}

// stream writes a random but coherent order-event stream for one
// inclusion-preconf market: each input (command) places, fills or cancels
// orders and emits their whole new state, as the matcher does, with
// transient taker states in the middle of an input.
type stream struct {
	t      *testing.T
	m      *Model
	rng    *rand.Rand
	slot   uint64
	n      int
	nextID int64
	live   map[int64]*liveOrder
}

func (s *stream) event(typ, cmd string, id int64, o *liveOrder, status int) {
	s.t.Helper()
	s.n++
	ev := topics.OrderEvent{CommandID: cmd, OrderID: id, UserID: 1 + id%3, AccountID: 10 + id%3,
		InstrumentID: topics.InstrumentID(topics.InclusionPreconf, s.slot), Slot: s.slot, Side: o.buy, OrderType: 2,
		Price: gwei(o.price), Quantity: strconv.FormatInt(o.qty, 10), Fulfilled: strconv.FormatInt(o.filled, 10), Status: status}
	if err := s.m.Apply(env(s.t, typ, fmt.Sprintf("oe:%d:%d", s.slot, s.n), int64(1000+s.n), ev)); err != nil {
		s.t.Fatal(err)
	}
}

func gwei(p int64) string { return decimal.New(p, -9).String() }

// input applies one random matcher input.
func (s *stream) input(i int) {
	cmd := fmt.Sprintf("cmd-%d", i)
	switch r := s.rng.IntN(10); {
	case r < 6: // a limit order that may trade through several makers
		s.nextID++
		o := &liveOrder{buy: s.rng.IntN(2) == 0, price: 10 + s.rng.Int64N(20), qty: 1000 * (1 + s.rng.Int64N(5))}
		s.event(topics.TypeOrderAccepted, cmd, s.nextID, o, topics.OrderStatusPending)
		for _, id := range s.sortedIDs() {
			m := s.live[id]
			if m.buy == o.buy || (o.buy && m.price > o.price) || (!o.buy && m.price < o.price) || o.filled == o.qty {
				continue
			}
			q := min(m.qty-m.filled, o.qty-o.filled)
			m.filled += q
			o.filled += q
			s.event(topics.TypeOrderFilled, cmd, id, m, fillStatus(m))
			s.event(topics.TypeOrderFilled, cmd, s.nextID, o, fillStatus(o)) // transient while more follow
			if m.filled == m.qty {
				delete(s.live, id)
			}
		}
		if o.filled < o.qty {
			if o.filled == 0 {
				s.event(topics.TypeOrderAccepted, cmd, s.nextID, o, topics.OrderStatusOnBook)
			}
			s.live[s.nextID] = o
		}
	case r < 9 && len(s.live) > 0: // a cancel
		ids := s.sortedIDs()
		id := ids[s.rng.IntN(len(ids))]
		s.event(topics.TypeOrderCancelled, cmd, id, s.live[id], topics.OrderStatusCancelledByUser)
		delete(s.live, id)
	default: // a rejected order never touches the book
		s.nextID++
		s.event(topics.TypeOrderRejected, cmd, s.nextID, &liveOrder{price: 1, qty: 1}, topics.OrderStatusError)
	}
	if s.rng.IntN(4) == 0 {
		s.m.Flush() // the feed flushes after each poll, at arbitrary points
	}
}

func fillStatus(o *liveOrder) int {
	if o.filled == o.qty {
		return topics.OrderStatusDone
	}
	return topics.OrderStatusPartiallyFilled
}

func (s *stream) sortedIDs() []int64 {
	ids := make([]int64, 0, len(s.live))
	for id := range s.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := s.live[ids[i]], s.live[ids[j]]
		if a.price != b.price {
			return a.price < b.price
		}
		return ids[i] < ids[j]
	})
	return ids
}

// expected aggregates the test's resting orders into a Book.
func (s *stream) expected() Book {
	lv := [2]map[int64]*Level{{}, {}}
	for _, o := range s.live {
		side := sideIndex(o.buy)
		l := lv[side][o.price]
		if l == nil {
			l = &Level{Price: gwei(o.price), Quantity: "0"}
			lv[side][o.price] = l
		}
		q, _ := strconv.ParseInt(l.Quantity, 10, 64)
		l.Quantity = strconv.FormatInt(q+o.qty-o.filled, 10)
		l.Orders++
	}
	var b Book
	for side, out := range [2]*[]Level{&b.Bids, &b.Asks} {
		for _, l := range lv[side] {
			*out = append(*out, *l)
		}
		sortLevels(side, *out)
	}
	return b
}

// TestBookFromRandomOrderStream checks that the model's book equals the
// aggregation of the resting orders after every input, and that a
// snapshot taken at any point plus the updates published after it
// reproduce the book exactly, with consecutive sequence numbers.
func TestBookFromRandomOrderStream(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := NewModel()
			rec := &recorder{}
			m.SetListener(rec)
			openMarket(t, m, 7, topics.InclusionPreconf)
			s := &stream{t: t, m: m, rng: rand.New(rand.NewPCG(seed, 99)), slot: 7, live: map[int64]*liveOrder{}}
			id := topics.InstrumentID(topics.InclusionPreconf, 7)
			var snap Book
			snapAt := 50 + int(seed)*7
			for i := range 400 {
				s.input(i)
				if i == snapAt {
					m.Flush()
					m.View(func(v View) { snap, _ = v.Book(id) })
					rec.books = nil
				}
			}
			m.Flush()
			var got Book
			m.View(func(v View) { got, _ = v.Book(id) })
			want := s.expected()
			if !sameLevels(got.Bids, want.Bids) || !sameLevels(got.Asks, want.Asks) {
				t.Fatalf("book\n got %+v\nwant %+v", got, want)
			}
			replayed := apply(t, snap, rec.books)
			if replayed.Seq != got.Seq || !sameLevels(replayed.Bids, got.Bids) || !sameLevels(replayed.Asks, got.Asks) {
				t.Fatalf("snapshot %d + %d updates = %+v, book %+v", snap.Seq, len(rec.books), replayed, got)
			}
			if len(got.Bids) > 0 && len(got.Asks) > 0 {
				bid, _ := decimal.NewFromString(got.Bids[0].Price)
				ask, _ := decimal.NewFromString(got.Asks[0].Price)
				if !bid.LessThan(ask) {
					t.Fatalf("crossed book: bid %s ask %s", bid, ask)
				}
			}
		})
	}
}

// apply plays updates onto a snapshot the way a client does.
func apply(t *testing.T, b Book, updates []BookUpdate) Book {
	t.Helper()
	lv := [2]map[string]Level{{}, {}}
	for side, ls := range [2][]Level{b.Bids, b.Asks} {
		for _, l := range ls {
			lv[side][l.Price] = l
		}
	}
	for _, u := range updates {
		if u.Seq != b.Seq+1 {
			t.Fatalf("update seq %d after %d", u.Seq, b.Seq)
		}
		b.Seq = u.Seq
		for side, ls := range [2][]Level{u.Bids, u.Asks} {
			for _, l := range ls {
				if l.Quantity == "0" {
					delete(lv[side], l.Price)
				} else {
					lv[side][l.Price] = l
				}
			}
		}
	}
	b.Bids, b.Asks = nil, nil
	for side, out := range [2]*[]Level{&b.Bids, &b.Asks} {
		for _, l := range lv[side] {
			*out = append(*out, l)
		}
		sortLevels(side, *out)
	}
	return b
}

func sameLevels(a, b []Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func openMarket(t *testing.T, m *Model, slot uint64, f topics.Family) {
	t.Helper()
	o := open(slot, f)
	if err := m.Apply(env(t, topics.TypeMarketOpen, o.ID(), 10, o)); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(env(t, topics.TypeMarketStatus, "oe:open:"+string(f), 11, topics.MarketStatus{
		InstrumentID: topics.InstrumentID(f, slot), Slot: slot, Status: 1, AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000})); err != nil {
		t.Fatal(err)
	}
}

// One matcher input's changes go out as one update: a taker that sweeps
// two makers and rests never shows a crossed book.
func TestOneUpdatePerInput(t *testing.T) {
	m := NewModel()
	rec := &recorder{}
	m.SetListener(rec)
	openMarket(t, m, 7, topics.InclusionPreconf)
	apply := func(typ, id string, ev topics.OrderEvent) {
		t.Helper()
		if err := m.Apply(env(t, typ, id, 20, ev)); err != nil {
			t.Fatal(err)
		}
	}
	apply(topics.TypeOrderAccepted, "oe:1", order(1, false, "0.00000002", "21000", "0", 1))
	apply(topics.TypeOrderAccepted, "oe:2", order(2, false, "0.00000003", "21000", "0", 1))
	ev := func(id int64, buy bool, price, qty, done string, status int, cmd string) topics.OrderEvent {
		o := order(id, buy, price, qty, done, status)
		o.CommandID = cmd
		return o
	}
	apply(topics.TypeOrderAccepted, "oe:3", ev(3, true, "0.00000004", "63000", "0", 0, "c3"))
	apply(topics.TypeOrderFilled, "oe:4", ev(1, false, "0.00000002", "21000", "21000", 10, "c3"))
	apply(topics.TypeOrderFilled, "oe:5", ev(3, true, "0.00000004", "63000", "21000", 13, "c3"))
	apply(topics.TypeOrderFilled, "oe:6", ev(2, false, "0.00000003", "21000", "21000", 10, "c3"))
	apply(topics.TypeOrderFilled, "oe:7", ev(3, true, "0.00000004", "63000", "42000", 13, "c3"))
	rec.books = nil
	m.Flush()
	if len(rec.books) != 1 {
		t.Fatalf("%d updates for one input, want 1: %+v", len(rec.books), rec.books)
	}
	u := rec.books[0]
	want := BookUpdate{Bids: []Level{{"0.00000004", "21000", 1}},
		Asks: []Level{{"0.00000002", "0", 0}, {"0.00000003", "0", 0}}}
	if !sameLevels(u.Bids, want.Bids) || !sameLevels(u.Asks, want.Asks) {
		t.Fatalf("update %+v, want %+v", u, want)
	}
	if got := rec.tickers[len(rec.tickers)-1]; got.BestBid == nil || *got.BestBid != "0.00000004" || got.BestAsk != nil {
		t.Fatalf("ticker after the sweep: %+v", got)
	}
}
