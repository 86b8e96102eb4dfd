package book

import "fmt"

// Book is the order book of one market. The zero value is not usable; call
// New.
type Book struct {
	bids, asks ladder
	nodes      []node
	free       []int32
	index      map[int64]int32 // order id → node
}

// New returns an empty book.
func New() *Book {
	return &Book{
		bids:  ladder{side: Buy},
		asks:  ladder{side: Sell},
		index: make(map[int64]int32),
	}
}

// Len returns the number of resting orders.
func (b *Book) Len() int { return len(b.index) }

// Get returns a resting order by id.
func (b *Book) Get(id int64) (Order, bool) {
	n, ok := b.index[id]
	if !ok {
		return Order{}, false
	}
	return b.nodes[n].Order, true
}

// Best returns the best price of side and the quantity resting there.
func (b *Book) Best(side Side) (price, qty int64, ok bool) {
	lv := b.ladder(side).best()
	if lv == nil {
		return 0, 0, false
	}
	for n := lv.head; n != none; n = b.nodes[n].next {
		qty += b.nodes[n].Qty
	}
	return lv.price, qty, true
}

func (b *Book) ladder(s Side) *ladder {
	if s == Buy {
		return &b.bids
	}
	return &b.asks
}

// Place matches o against the other side and applies tif to what is left.
// o.Price is the limit (the worst acceptable price of an
// immediate-or-cancel order); o.ID must not be resting already.
//
// Priority is price, then time: the best price trades first, and within a
// price the oldest order. Trades happen at the maker's price.
//
// Self-trade prevention: a resting order of o.Account is never traded with
// o. Matching removes it (a SelfTradeCancelled event) and continues with
// the next order, so the newer instruction of the account wins and the
// incoming order keeps its place in time. A fill-or-kill order counts only
// other accounts' orders when it decides whether it can fill.
//
// A postOnly order that would trade (against any order, its own account's
// included) is rejected untouched.
//
// Effects on resting orders are appended to events, which is returned, so
// a caller can reuse one slice across calls.
func (b *Book) Place(o Order, tif TimeInForce, postOnly bool, events []Event) (Result, []Event) {
	opp := b.ladder(o.Side.Opposite())
	if postOnly {
		if best := opp.best(); best != nil && opp.crosses(best.price, o.Price) {
			return Result{Outcome: PostOnlyRejected, Left: o.Qty}, events
		}
	}
	if tif == FillOrKill && b.fillable(opp, o) < o.Qty {
		return Result{Outcome: Killed, Left: o.Qty}, events
	}
	left, events := b.match(opp, o, events)
	res := Result{Filled: o.Qty - left, Left: left}
	switch {
	case left == 0:
		res.Outcome = Filled
	case tif == GoodTillCancel:
		o.Qty = left
		b.rest(o)
		res.Outcome = Rested
	default:
		res.Outcome = RemainderCancelled
	}
	return res, events
}

// fillable returns how much of o other accounts' resting orders can fill,
// stopping once it is enough.
func (b *Book) fillable(opp *ladder, o Order) int64 {
	var sum int64
	for i := len(opp.levels) - 1; i >= 0 && sum < o.Qty; i-- {
		lv := &opp.levels[i]
		if !opp.crosses(lv.price, o.Price) {
			break
		}
		for n := lv.head; n != none && sum < o.Qty; n = b.nodes[n].next {
			if b.nodes[n].Account != o.Account {
				sum += b.nodes[n].Qty
			}
		}
	}
	return sum
}

// match trades o against opp and returns the quantity left.
func (b *Book) match(opp *ladder, o Order, events []Event) (int64, []Event) {
	left := o.Qty
	for left > 0 {
		lv := opp.best()
		if lv == nil || !opp.crosses(lv.price, o.Price) {
			break
		}
		price := lv.price
		for left > 0 && lv.head != none {
			n := lv.head
			m := &b.nodes[n]
			if m.Account == o.Account {
				events = append(events, Event{Kind: SelfTradeCancelled, Maker: m.Order, Price: m.Price, Qty: m.Qty})
				b.unlink(lv, n)
				continue
			}
			q := min(left, m.Qty)
			m.Qty -= q
			left -= q
			events = append(events, Event{Kind: Traded, Maker: m.Order, Price: price, Qty: q})
			if m.Qty == 0 {
				b.unlink(lv, n)
			}
		}
		if lv.head == none {
			opp.levels = opp.levels[:len(opp.levels)-1]
		}
	}
	return left, events
}

// rest appends o to the tail of its price level.
func (b *Book) rest(o Order) {
	lv := b.ladder(o.Side).levelFor(o.Price)
	n := b.alloc(o)
	b.nodes[n].prev = lv.tail
	if lv.tail != none {
		b.nodes[lv.tail].next = n
	} else {
		lv.head = n
	}
	lv.tail = n
	b.index[o.ID] = n
}

// Cancel removes a resting order and returns it as it was.
func (b *Book) Cancel(id int64) (Order, bool) {
	n, ok := b.index[id]
	if !ok {
		return Order{}, false
	}
	o := b.nodes[n].Order
	l := b.ladder(o.Side)
	i, _ := l.search(o.Price)
	lv := &l.levels[i]
	b.unlink(lv, n)
	if lv.head == none {
		l.drop(o.Price)
	}
	return o, true
}

// unlink takes node n out of lv and the index and frees it. It leaves an
// empty level in place for the caller to drop.
func (b *Book) unlink(lv *level, n int32) {
	nd := &b.nodes[n]
	if nd.prev != none {
		b.nodes[nd.prev].next = nd.next
	} else {
		lv.head = nd.next
	}
	if nd.next != none {
		b.nodes[nd.next].prev = nd.prev
	} else {
		lv.tail = nd.prev
	}
	delete(b.index, nd.ID)
	b.free = append(b.free, n)
}

func (b *Book) alloc(o Order) int32 {
	nd := node{Order: o, prev: none, next: none}
	if k := len(b.free); k > 0 {
		n := b.free[k-1]
		b.free = b.free[:k-1]
		b.nodes[n] = nd
		return n
	}
	b.nodes = append(b.nodes, nd)
	return int32(len(b.nodes) - 1)
}

// Walk calls fn for every resting order, bids from the best price down,
// then asks from the best price up, each level oldest first, until fn
// returns false. The order is fixed by the book's contents, so callers that
// emit events while walking stay deterministic. fn must not change the book.
func (b *Book) Walk(fn func(Order) bool) {
	for _, l := range []*ladder{&b.bids, &b.asks} {
		for i := len(l.levels) - 1; i >= 0; i-- {
			for n := l.levels[i].head; n != none; n = b.nodes[n].next {
				if !fn(b.nodes[n].Order) {
					return
				}
			}
		}
	}
}

// Restore rests o at the tail of its price level without matching. Resting
// the orders of a book in the order Walk visits them rebuilds a book with
// the same priorities, which is how a snapshot is loaded.
func (b *Book) Restore(o Order) error {
	if _, dup := b.index[o.ID]; dup || o.Qty <= 0 || (o.Side != Buy && o.Side != Sell) {
		return fmt.Errorf("restore order %d: duplicate, empty or without a side", o.ID)
	}
	b.rest(o)
	return nil
}
