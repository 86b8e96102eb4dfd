package engine

import (
	"slices"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// order is an order being decided or live on its market's book.
type order struct {
	cmd    topics.OrderPlace
	market *market
	side   book.Side
	price  int64 // limit or worst price, in ticks
	qty    int64
	filled int64
	status int
	live   bool
}

// doneOrder is what the slot keeps of an order that is no longer live
// (filled, cancelled, expired or rejected) until the slot finalizes: its
// id is not placed again, and a late cancel of it by its account in its
// market is answered 109, any other 108. Nothing else of it is ever read.
type doneOrder struct {
	account int64
	market  family // noMarket: rejected before it reached a market
}

// retire keeps what a cancel or a repeated place needs of o, which is no
// longer live or was never accepted.
func (s *slot) retire(o *order) {
	d := doneOrder{account: o.cmd.AccountID, market: noMarket}
	if o.market != nil {
		d.market = familyOf(o.market.family)
	}
	delete(s.orders, o.cmd.OrderID)
	s.done[o.cmd.OrderID] = d
}

// decided reports whether the slot already decided an order with this id.
func (s *slot) decided(id int64) bool {
	_, live := s.orders[id]
	_, done := s.done[id]
	return live || done
}

// remove takes a live order off its book and releases what it held: the
// client order id and, for a sell, the locked position.
func (s *slot) remove(o *order) {
	o.market.book.Cancel(o.cmd.OrderID)
	s.release(o)
}

// release ends the life of an order that is no longer on the book; the
// caller may still report it.
func (s *slot) release(o *order) {
	o.live = false
	s.retire(o)
	if o.cmd.ClientOrderID != "" {
		delete(o.market.clientIDs, clientKey{o.cmd.AccountID, o.cmd.ClientOrderID})
	}
	if o.side == book.Sell {
		s.position(o.cmd.AccountID, familyOf(o.market.family)).locked -= o.qty - o.filled
	}
}

// liveOrders returns the resting orders of m, of account when it is not
// zero, sorted by order id so that events about several orders come out in
// the same order on every replay.
func (s *slot) liveOrders(m *market, account int64) []*order {
	var out []*order
	m.book.Walk(func(bo book.Order) bool {
		if account == 0 || bo.Account == account {
			out = append(out, s.orders[bo.ID])
		}
		return true
	})
	slices.SortFunc(out, func(a, b *order) int {
		switch {
		case a.cmd.OrderID < b.cmd.OrderID:
			return -1
		case a.cmd.OrderID > b.cmd.OrderID:
			return 1
		}
		return 0
	})
	return out
}
