package book

// Side is the side of an order.
type Side uint8

// The two sides.
const (
	Buy Side = iota + 1
	Sell
)

// Opposite returns the other side.
func (s Side) Opposite() Side {
	if s == Buy {
		return Sell
	}
	return Buy
}

// Order is an order as the book sees it. Price is in ticks of the market's
// priceStep; Qty is the remaining quantity in units of the market (1 for a
// whole block, gas units for inclusion preconf).
type Order struct {
	ID      int64
	Account int64
	Side    Side
	Price   int64
	Qty     int64
}

// TimeInForce says what happens to the part of an order the book cannot
// fill on arrival.
type TimeInForce uint8

const (
	// GoodTillCancel rests the remainder: a limit order.
	GoodTillCancel TimeInForce = iota + 1
	// ImmediateOrCancel cancels the remainder: a market order, whose Price
	// is its worst acceptable price.
	ImmediateOrCancel
	// FillOrKill trades the whole quantity at once or nothing at all.
	FillOrKill
)

// EventKind is what happened to a resting (maker) order.
type EventKind uint8

const (
	// Traded: the maker traded Qty at Price with the incoming order.
	Traded EventKind = iota + 1
	// SelfTradeCancelled: the maker belonged to the incoming order's
	// account and was removed from the book with Qty left, instead of
	// trading with it (see Book.Place).
	SelfTradeCancelled
)

// Event is one effect of an incoming order on a resting one. Maker holds
// the maker after the event: Maker.Qty is what it has left.
type Event struct {
	Kind  EventKind
	Maker Order
	Price int64
	Qty   int64
}

// Outcome is what became of the incoming order.
type Outcome uint8

const (
	// Rested: the remainder (possibly all of it) rests on the book.
	Rested Outcome = iota + 1
	// Filled: the whole quantity traded.
	Filled
	// RemainderCancelled: an immediate-or-cancel order traded what it
	// could; the rest was cancelled.
	RemainderCancelled
	// Killed: a fill-or-kill order could not trade whole; nothing traded.
	Killed
	// PostOnlyRejected: a passive order would have traded on arrival;
	// nothing traded and nothing rests.
	PostOnlyRejected
)

// Result sums up Place for the incoming order.
type Result struct {
	Outcome Outcome
	// Filled is the quantity traded; Left is what rests or was cancelled.
	Filled int64
	Left   int64
}
