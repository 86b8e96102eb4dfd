package markets

import (
	"sort"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// View reads the model inside Model.View, where no change can happen or
// be published. Its methods must not be kept beyond the call.
type View struct{ m *Model }

// View runs fn with a consistent view of the model. A live feed registers
// its subscriber inside fn, so that the listener's next call is the first
// change after what fn read.
func (m *Model) View(fn func(View)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(View{m})
}

// lookup returns the visible market of an instrument.
func (m *Model) lookup(instrumentID string) *market {
	f, slot, err := topics.ParseInstrumentID(instrumentID)
	if err != nil {
		return nil
	}
	s := m.slots[slot]
	if s == nil || !s.markets[familyIndex(f)].visible() {
		return nil
	}
	return s.markets[familyIndex(f)]
}

// live returns the listed markets of a family (status 1 to 3), by slot.
func (m *Model) live(f topics.Family) []*market {
	var out []*market
	for _, s := range m.sortedSlots() {
		if mk := m.slots[s].markets[familyIndex(f)]; mk.live() {
			out = append(out, mk)
		}
	}
	return out
}

// Markets returns the listed markets of a family as the REST reads show
// them.
func (v View) Markets(f topics.Family) []any {
	out := []any{}
	for _, mk := range v.m.live(f) {
		if f == topics.WholeBlock {
			out = append(out, mk.wholeBlock())
		} else {
			out = append(out, mk.preconf())
		}
	}
	return out
}

// Book returns the book of a visible market.
func (v View) Book(instrumentID string) (Book, bool) {
	mk := v.m.lookup(instrumentID)
	if mk == nil {
		return Book{}, false
	}
	levels := mk.book.snapshot()
	return Book{InstrumentID: instrumentID, Seq: mk.book.seq, Bids: levels[bids], Asks: levels[asks]}, true
}

// Books returns the books of a family's listed markets.
func (v View) Books(f topics.Family) []Book {
	var out []Book
	for _, mk := range v.m.live(f) {
		b, _ := v.Book(topics.InstrumentID(f, mk.slot))
		out = append(out, b)
	}
	return out
}

// Ticker returns the ticker of a visible market.
func (v View) Ticker(instrumentID string) (Ticker, bool) {
	mk := v.m.lookup(instrumentID)
	if mk == nil {
		return Ticker{}, false
	}
	return mk.ticker(), true
}

// Tickers returns the tickers of a family's listed markets.
func (v View) Tickers(f topics.Family) []Ticker {
	var out []Ticker
	for _, mk := range v.m.live(f) {
		out = append(out, mk.ticker())
	}
	return out
}

// Trades returns up to limit recent trades of a visible market, newest
// first.
func (v View) Trades(instrumentID string, limit int) ([]Trade, bool) {
	mk := v.m.lookup(instrumentID)
	if mk == nil {
		return nil, false
	}
	out := make([]Trade, 0, min(limit, len(mk.trades)))
	for i := len(mk.trades) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, mk.trades[i])
	}
	return out, true
}

// OpenOrders returns the orders of a user resting on the books of a
// family's listed markets (f "" for both families, instrumentID "" for
// every market), by order id.
func (v View) OpenOrders(userID int64, f topics.Family, instrumentID string) []Order {
	fams := []topics.Family{f}
	if f == "" {
		fams = []topics.Family{topics.WholeBlock, topics.InclusionPreconf}
	}
	out := []Order{}
	for _, f := range fams {
		for _, mk := range v.m.live(f) {
			if instrumentID != "" && topics.InstrumentID(f, mk.slot) != instrumentID {
				continue
			}
			for _, o := range mk.orders {
				if o.ev.UserID == userID {
					out = append(out, orderView(&o.ev, o.created, o.updated))
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OrderID < out[j].OrderID })
	return out
}

func (mk *market) ticker() Ticker {
	last, mid, bid := mk.prices()
	t := Ticker{Family: mk.family, InstrumentID: topics.InstrumentID(mk.family, mk.slot),
		MarketID: topics.MarketID(mk.family, mk.slot), Slot: mk.slot, Status: mk.status,
		Price: last, Direction: mk.lastSide, BestBid: bid, MidPrice: mid,
		Volume: mk.stats.volume.String(), Trades: mk.stats.count,
		AvailablePreconf: mk.available, UpdateDate: mk.updated}
	if ask, ok := mk.book.best(asks); ok {
		t.BestAsk = decimalPtr(ask)
	}
	if mk.stats.count > 0 {
		t.Open, t.High, t.Low = decimalPtr(mk.stats.open), decimalPtr(mk.stats.high), decimalPtr(mk.stats.low)
	}
	return t
}

func decimalPtr(d decimal.Decimal) *string {
	s := d.String()
	return &s
}
