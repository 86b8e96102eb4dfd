package markets

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Book sides, as indexes of book.levels.
const (
	bids = 0
	asks = 1
)

// Level is one aggregated price level: the price, the quantity resting at
// it and how many orders make it up. It is written as the JSON array
// ["price", "quantity", orders]; a quantity of "0" (with 0 orders) in an
// update removes the level.
type Level struct {
	Price    string
	Quantity string
	Orders   int
}

// MarshalJSON writes the level as ["price", "quantity", orders].
func (l Level) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(l.Price)+len(l.Quantity)+16)
	b = append(b, '[')
	b = strconv.AppendQuote(b, l.Price)
	b = append(b, ',')
	b = strconv.AppendQuote(b, l.Quantity)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(l.Orders), 10)
	return append(b, ']'), nil
}

// UnmarshalJSON reads ["price", "quantity", orders].
func (l *Level) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 3 {
		return fmt.Errorf("price level %s: want [\"price\", \"quantity\", orders]", b)
	}
	if err := json.Unmarshal(raw[0], &l.Price); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[1], &l.Quantity); err != nil {
		return err
	}
	return json.Unmarshal(raw[2], &l.Orders)
}

// Book is the aggregated order book of one market at sequence Seq: bids
// best (highest) first, asks best (lowest) first.
type Book struct {
	InstrumentID string  `json:"instrumentId"`
	Seq          uint64  `json:"seq"`
	Bids         []Level `json:"bids"`
	Asks         []Level `json:"asks"`
}

// BookUpdate is what changed in a market's book with one matcher input:
// the new absolute state of every level that changed, in the order of a
// Book. Seq is one more than the Seq of the book before it, so a client
// that applies updates to a snapshot notices a missing one.
type BookUpdate struct {
	Family       topics.Family `json:"-"`
	Slot         uint64        `json:"-"`
	Time         int64         `json:"-"`
	InstrumentID string        `json:"instrumentId"`
	Seq          uint64        `json:"seq"`
	Bids         []Level       `json:"bids"`
	Asks         []Level       `json:"asks"`
}

type level struct {
	price  decimal.Decimal
	qty    decimal.Decimal
	orders int
}

// book aggregates a market's resting orders by price. dirty holds the
// prices changed since the last flush, by side.
type book struct {
	levels [2]map[string]*level
	dirty  [2]map[string]bool
	seq    uint64
}

func newBook() book {
	return book{
		levels: [2]map[string]*level{{}, {}},
		dirty:  [2]map[string]bool{{}, {}},
	}
}

func sideIndex(buy bool) int {
	if buy {
		return bids
	}
	return asks
}

// add changes the level of price on a side by qty (negative to take away)
// and orders (+1, −1 or 0).
func (b *book) add(side int, price, qty decimal.Decimal, orders int) {
	key := price.String()
	l := b.levels[side][key]
	if l == nil {
		l = &level{price: price}
		b.levels[side][key] = l
	}
	l.qty = l.qty.Add(qty)
	l.orders += orders
	if l.orders <= 0 || !l.qty.IsPositive() {
		delete(b.levels[side], key)
	}
	b.dirty[side][key] = true
}

func (b *book) isDirty() bool { return len(b.dirty[bids])+len(b.dirty[asks]) > 0 }

// take returns the changed levels, in book order, and clears dirty.
func (b *book) take() (changed [2][]Level) {
	for side := range b.dirty {
		changed[side] = make([]Level, 0, len(b.dirty[side]))
		for key := range b.dirty[side] {
			if l := b.levels[side][key]; l != nil {
				changed[side] = append(changed[side], l.view())
			} else {
				changed[side] = append(changed[side], Level{Price: key, Quantity: "0"})
			}
		}
		clear(b.dirty[side])
		sortLevels(side, changed[side])
	}
	return changed
}

// snapshot returns every level in book order.
func (b *book) snapshot() (out [2][]Level) {
	for side := range b.levels {
		out[side] = make([]Level, 0, len(b.levels[side]))
		for _, l := range b.levels[side] {
			out[side] = append(out[side], l.view())
		}
		sortLevels(side, out[side])
	}
	return out
}

// best returns the best price of a side; ok is false when it is empty.
func (b *book) best(side int) (p decimal.Decimal, ok bool) {
	for _, l := range b.levels[side] {
		if !ok || (side == bids && l.price.GreaterThan(p)) || (side == asks && l.price.LessThan(p)) {
			p, ok = l.price, true
		}
	}
	return p, ok
}

func (l *level) view() Level {
	return Level{Price: l.price.String(), Quantity: l.qty.String(), Orders: l.orders}
}

// sortLevels orders bids by price descending and asks ascending.
func sortLevels(side int, ls []Level) {
	sort.Slice(ls, func(i, j int) bool {
		pi, _ := decimal.NewFromString(ls[i].Price)
		pj, _ := decimal.NewFromString(ls[j].Price)
		if side == bids {
			return pi.GreaterThan(pj)
		}
		return pi.LessThan(pj)
	})
}
