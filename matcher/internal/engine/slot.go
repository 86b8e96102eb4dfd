package engine

import (
	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// family indexes the two markets of a slot; the order (whole block first)
// is the order in which ticks touch them.
type family int

const (
	wholeBlock family = iota
	inclusionPreconf
	families
)

func familyOf(f topics.Family) family {
	if f == topics.WholeBlock {
		return wholeBlock
	}
	return inclusionPreconf
}

// noMarket is the market of a done order that was rejected before it
// reached a market.
const noMarket family = -1

// slot is the state of one slot: its two markets, the orders placed in
// them, the positions of the slot and the command ids seen.
type slot struct {
	n         uint64
	transient bool // a stand-in for a slot without state, to answer commands
	issued    bool // the first market.open credited the seller
	// phase is the market status the clock has moved the slot to:
	// 0 before trading_closed, then 2, 3, 4.
	phase int

	sellerUser, sellerAccount int64
	totalPreconf              int64
	// fees are the rates of the slot's first market.open. Trades use
	// their own market's rates; these are kept in snapshots, as they
	// always were, so that every matcher version restores them.
	fees feeRates
	// holder is the account that holds the whole block; the preconf gas
	// it holds unlocked goes with the block (availablePreconf).
	holder int64

	markets [families]*market
	// orders are the live orders; done holds what is left of every other
	// order the slot decided. Both are nil once the slot finalized.
	orders    map[int64]*order
	done      map[int64]doneOrder
	positions map[positionKey]*position
	seen      map[string]struct{}

	nextEvent uint64
	nextTrade int64
}

func newSlot(n uint64) *slot {
	return &slot{
		n:         n,
		orders:    make(map[int64]*order),
		done:      make(map[int64]doneOrder),
		positions: make(map[positionKey]*position),
		seen:      make(map[string]struct{}),
	}
}

// market is one market of a slot with its validated parameters.
type market struct {
	family     topics.Family
	id         int64
	instrument string
	status     int
	params
	fees      feeRates          // the rates of the market's own market.open
	open      topics.MarketOpen // the command that opened it, for snapshots
	book      *book.Book
	clientIDs map[clientKey]int64 // live orders by (account, clientOrderId)
	prices    map[int64]string    // price strings by ticks, made once
}

type clientKey struct {
	account int64
	id      string
}

// slotFor returns the state of slot n, creating it when create is true.
func (e *Engine) slotFor(n uint64, create bool) *slot {
	s := e.slots[n]
	if s == nil && create {
		s = newSlot(n)
		e.slots[n] = s
	}
	return s
}

// firstSeen records a command id and reports whether it is new.
func (s *slot) firstSeen(id string) bool {
	if _, dup := s.seen[id]; dup {
		return false
	}
	s.seen[id] = struct{}{}
	return true
}

// openMarket returns the market of f if it is open for trading.
func (s *slot) openMarket(f topics.Family) *market {
	m := s.markets[familyOf(f)]
	if m == nil || m.status != topics.MarketStatusOpen {
		return nil
	}
	return m
}

// evictBefore forgets finalized slots more than RetainSlots before n.
func (e *Engine) evictBefore(n uint64) {
	keep := e.finalized[:0]
	for _, old := range e.finalized {
		if old+RetainSlots < n {
			delete(e.slots, old)
			continue
		}
		keep = append(keep, old)
	}
	e.finalized = keep
}
