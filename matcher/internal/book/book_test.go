package book

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ask and bid build resting orders: id, account, price, quantity.
func ask(id, acct, price, qty int64) Order {
	return Order{ID: id, Account: acct, Side: Sell, Price: price, Qty: qty}
}

func bid(id, acct, price, qty int64) Order {
	return Order{ID: id, Account: acct, Side: Buy, Price: price, Qty: qty}
}

// eventString is a compact transcript: "T3@9x2:0" is maker 3 traded 2 at
// price 9 with 0 left; "S3:2" is maker 3 removed by self-trade with 2 left.
func eventString(e Event) string {
	if e.Kind == SelfTradeCancelled {
		return fmt.Sprintf("S%d:%d", e.Maker.ID, e.Qty)
	}
	return fmt.Sprintf("T%d@%dx%d:%d", e.Maker.ID, e.Price, e.Qty, e.Maker.Qty)
}

// bookString lists the resting orders in Walk order: "b1@10x2" is bid 1.
func bookString(b *Book) string {
	var parts []string
	b.Walk(func(o Order) bool {
		s := "a"
		if o.Side == Buy {
			s = "b"
		}
		parts = append(parts, fmt.Sprintf("%s%d@%dx%d", s, o.ID, o.Price, o.Qty))
		return true
	})
	return strings.Join(parts, " ")
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name     string
		resting  []Order
		in       Order
		tif      TimeInForce
		postOnly bool
		want     Result
		events   string
		book     string
	}{
		{
			name:    "limit rests when it does not cross",
			resting: []Order{ask(1, 1, 10, 1)},
			in:      bid(2, 2, 9, 1), tif: GoodTillCancel,
			want: Result{Outcome: Rested, Left: 1},
			book: "b2@9x1 a1@10x1",
		},
		{
			name:    "best price trades first, at the maker's price",
			resting: []Order{ask(1, 1, 11, 1), ask(2, 1, 9, 1), ask(3, 1, 10, 1)},
			in:      bid(4, 2, 11, 3), tif: GoodTillCancel,
			want:   Result{Outcome: Filled, Filled: 3},
			events: "T2@9x1:0 T3@10x1:0 T1@11x1:0",
		},
		{
			name:    "oldest order of a price trades first",
			resting: []Order{ask(1, 1, 10, 1), ask(2, 3, 10, 1)},
			in:      bid(3, 2, 10, 1), tif: GoodTillCancel,
			want:   Result{Outcome: Filled, Filled: 1},
			events: "T1@10x1:0",
			book:   "a2@10x1",
		},
		{
			name:    "partial fill of the maker keeps its place",
			resting: []Order{ask(1, 1, 10, 5), ask(2, 3, 10, 5)},
			in:      bid(3, 2, 10, 3), tif: GoodTillCancel,
			want:   Result{Outcome: Filled, Filled: 3},
			events: "T1@10x3:2",
			book:   "a1@10x2 a2@10x5",
		},
		{
			name:    "partial fill of a limit order rests the remainder",
			resting: []Order{ask(1, 1, 10, 5)},
			in:      bid(2, 2, 10, 8), tif: GoodTillCancel,
			want:   Result{Outcome: Rested, Filled: 5, Left: 3},
			events: "T1@10x5:0",
			book:   "b2@10x3",
		},
		{
			name:    "limit does not trade beyond its price",
			resting: []Order{bid(1, 1, 10, 2), bid(2, 1, 8, 2)},
			in:      ask(3, 2, 9, 5), tif: GoodTillCancel,
			want:   Result{Outcome: Rested, Filled: 2, Left: 3},
			events: "T1@10x2:0",
			book:   "b2@8x2 a3@9x3",
		},
		{
			name:    "market order stops at its worst price and cancels the rest",
			resting: []Order{ask(1, 1, 10, 2), ask(2, 1, 12, 2)},
			in:      bid(3, 2, 11, 5), tif: ImmediateOrCancel,
			want:   Result{Outcome: RemainderCancelled, Filled: 2, Left: 3},
			events: "T1@10x2:0",
			book:   "a2@12x2",
		},
		{
			name: "market order on an empty book never rests",
			in:   ask(1, 2, 1, 5), tif: ImmediateOrCancel,
			want: Result{Outcome: RemainderCancelled, Left: 5},
		},
		{
			name:    "fill-or-kill that cannot fill whole leaves the book untouched",
			resting: []Order{ask(1, 1, 10, 2), ask(2, 1, 12, 2)},
			in:      bid(3, 2, 11, 3), tif: FillOrKill,
			want: Result{Outcome: Killed, Left: 3},
			book: "a1@10x2 a2@12x2",
		},
		{
			name:    "fill-or-kill fills whole across levels",
			resting: []Order{ask(1, 1, 10, 2), ask(2, 1, 12, 2)},
			in:      bid(3, 2, 12, 3), tif: FillOrKill,
			want:   Result{Outcome: Filled, Filled: 3},
			events: "T1@10x2:0 T2@12x1:1",
			book:   "a2@12x1",
		},
		{
			name:    "fill-or-kill does not count its own account's orders",
			resting: []Order{ask(1, 2, 10, 5), ask(2, 1, 10, 1)},
			in:      bid(3, 2, 10, 3), tif: FillOrKill,
			want: Result{Outcome: Killed, Left: 3},
			book: "a1@10x5 a2@10x1",
		},
		{
			name:    "post-only that would trade is rejected",
			resting: []Order{ask(1, 1, 10, 1)},
			in:      bid(2, 2, 10, 1), tif: GoodTillCancel, postOnly: true,
			want: Result{Outcome: PostOnlyRejected, Left: 1},
			book: "a1@10x1",
		},
		{
			name:    "post-only that would meet its own order is rejected too",
			resting: []Order{ask(1, 2, 10, 1)},
			in:      bid(2, 2, 11, 1), tif: GoodTillCancel, postOnly: true,
			want: Result{Outcome: PostOnlyRejected, Left: 1},
			book: "a1@10x1",
		},
		{
			name:    "post-only below the ask rests",
			resting: []Order{ask(1, 1, 10, 1)},
			in:      bid(2, 2, 9, 1), tif: GoodTillCancel, postOnly: true,
			want: Result{Outcome: Rested, Left: 1},
			book: "b2@9x1 a1@10x1",
		},
		{
			name:    "self-trade cancels the resting order and matching goes on",
			resting: []Order{ask(1, 2, 9, 4), ask(2, 1, 9, 1), ask(3, 2, 10, 1), ask(4, 1, 10, 5)},
			in:      bid(5, 2, 10, 3), tif: GoodTillCancel,
			want:   Result{Outcome: Filled, Filled: 3},
			events: "S1:4 T2@9x1:0 S3:1 T4@10x2:3",
			book:   "a4@10x3",
		},
		{
			name:    "self-trade alone leaves the incoming order to rest",
			resting: []Order{bid(1, 2, 10, 1)},
			in:      ask(2, 2, 10, 1), tif: GoodTillCancel,
			want:   Result{Outcome: Rested, Left: 1},
			events: "S1:1",
			book:   "a2@10x1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			for _, o := range tt.resting {
				if res, _ := b.Place(o, GoodTillCancel, false, nil); res.Outcome != Rested {
					t.Fatalf("setup order %d did not rest: %+v", o.ID, res)
				}
			}
			res, events := b.Place(tt.in, tt.tif, tt.postOnly, nil)
			if res != tt.want {
				t.Errorf("result %+v, want %+v", res, tt.want)
			}
			var got []string
			for _, e := range events {
				got = append(got, eventString(e))
			}
			if s := strings.Join(got, " "); s != tt.events {
				t.Errorf("events %q, want %q", s, tt.events)
			}
			if s := bookString(b); s != tt.book {
				t.Errorf("book %q, want %q", s, tt.book)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	b := New()
	for _, o := range []Order{bid(1, 1, 10, 1), bid(2, 1, 10, 2), bid(3, 1, 10, 3), ask(4, 1, 12, 1)} {
		b.Place(o, GoodTillCancel, false, nil)
	}
	got, ok := b.Cancel(2)
	if !ok || got != bid(2, 1, 10, 2) {
		t.Fatalf("cancel 2: %+v %v", got, ok)
	}
	if _, ok := b.Cancel(2); ok {
		t.Fatal("cancelled order 2 twice")
	}
	if _, ok := b.Cancel(99); ok {
		t.Fatal("cancelled an unknown order")
	}
	if s := bookString(b); s != "b1@10x1 b3@10x3 a4@12x1" {
		t.Fatalf("book after cancel %q", s)
	}
	b.Cancel(1)
	b.Cancel(3)
	if _, _, ok := b.Best(Buy); ok || b.Len() != 1 {
		t.Fatalf("bids left after cancelling all: %q", bookString(b))
	}
	// A freed slot is reused without disturbing time priority.
	b.Place(bid(5, 1, 11, 1), GoodTillCancel, false, nil)
	b.Place(bid(6, 2, 11, 1), GoodTillCancel, false, nil)
	_, events := b.Place(ask(7, 3, 11, 1), GoodTillCancel, false, nil)
	if len(events) != 1 || events[0].Maker.ID != 5 {
		t.Fatalf("after reuse, ask traded with %v, want order 5", events)
	}
}

func TestBest(t *testing.T) {
	b := New()
	for _, o := range []Order{bid(1, 1, 9, 1), bid(2, 1, 10, 2), bid(3, 2, 10, 3), ask(4, 1, 12, 1), ask(5, 1, 11, 4)} {
		b.Place(o, GoodTillCancel, false, nil)
	}
	if p, q, ok := b.Best(Buy); !ok || p != 10 || q != 5 {
		t.Errorf("best bid %d x %d %v", p, q, ok)
	}
	if p, q, ok := b.Best(Sell); !ok || p != 11 || q != 4 {
		t.Errorf("best ask %d x %d %v", p, q, ok)
	}
	if got, ok := b.Get(3); !ok || got.Qty != 3 {
		t.Errorf("get 3: %+v %v", got, ok)
	}
	var ids []int64
	b.Walk(func(o Order) bool { ids = append(ids, o.ID); return len(ids) < 3 })
	if !slices.Equal(ids, []int64{2, 3, 1}) {
		t.Errorf("walk stopped early at %v", ids)
	}
}
