package book

import "sort"

// none marks the end of an intrusive list of nodes.
const none int32 = -1

// node is an order in the book's slab, linked into its price level's FIFO.
type node struct {
	Order
	prev, next int32
}

// level is one price with its orders in time priority (head is oldest).
type level struct {
	price      int64
	head, tail int32
}

// ladder is one side of the book. Levels are sorted so that the best price
// is last: ascending prices for bids, descending for asks. Taking from the
// best level is then a pop from the end of the slice, and new levels near
// the top (the common case) move few elements.
type ladder struct {
	side   Side
	levels []level
}

// better reports whether price a has priority over price b on this side.
func (l *ladder) better(a, b int64) bool {
	if l.side == Buy {
		return a > b
	}
	return a < b
}

// search returns the index of price's level, or where it would be inserted,
// and whether it exists.
func (l *ladder) search(price int64) (int, bool) {
	// Levels are ordered worst first; find the first level not worse than
	// price.
	i := sort.Search(len(l.levels), func(i int) bool { return !l.better(price, l.levels[i].price) })
	return i, i < len(l.levels) && l.levels[i].price == price
}

// best returns the best level, or nil when the side is empty.
func (l *ladder) best() *level {
	if len(l.levels) == 0 {
		return nil
	}
	return &l.levels[len(l.levels)-1]
}

// levelFor returns the level of price, creating it when missing.
func (l *ladder) levelFor(price int64) *level {
	i, ok := l.search(price)
	if !ok {
		l.levels = append(l.levels, level{})
		copy(l.levels[i+1:], l.levels[i:])
		l.levels[i] = level{price: price, head: none, tail: none}
	}
	return &l.levels[i]
}

// drop removes the level of price, which must be empty.
func (l *ladder) drop(price int64) {
	if i, ok := l.search(price); ok {
		l.levels = append(l.levels[:i], l.levels[i+1:]...)
	}
}

// crosses reports whether a resting price on this ladder can trade with an
// incoming order limited to limit.
func (l *ladder) crosses(price, limit int64) bool {
	if l.side == Sell {
		return price <= limit
	}
	return price >= limit
}
