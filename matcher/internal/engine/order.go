package engine

import (
	"slices"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// order is an order the slot accepted, live or done. Done orders stay until
// the slot finalizes so that a late cancel is answered 109, not 108.
type order struct {
	cmd       topics.OrderPlace
	commandID string
	market    *market
	side      book.Side
	price     int64 // limit or worst price, in ticks
	qty       int64
	filled    int64
	status    int
	live      bool
}

// remove takes a live order off its book and releases what it held: the
// client order id and, for a sell, the locked position.
func (s *slot) remove(o *order) {
	o.market.book.Cancel(o.cmd.OrderID)
	s.release(o)
}

// release ends the life of an order that is no longer on the book.
func (s *slot) release(o *order) {
	o.live = false
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
