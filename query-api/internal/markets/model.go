// Package markets is query-api's in-memory model of the live markets,
// fed from the log: market.open commands from orders, market.status,
// order events and fills from the matcher's topics (read_committed). Every
// instance keeps its own model and rebuilds it at start by reading the
// records of the live slots again, so it needs no database and no
// coordination.
package markets

import (
	"sort"
	"sync"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// keepFinalized is how many finalized slots stay readable by slot.
const keepFinalized = 256

// Model holds the markets of the live slots. Apply is called by one
// consumer goroutine; reads come from request goroutines; one RWMutex
// guards everything.
type Model struct {
	mu        sync.RWMutex
	slots     map[uint64]*slotState
	finalized []uint64 // in the order they finalized, for eviction
}

type slotState struct {
	markets [2]*market // whole block, inclusion preconf
	final   bool
}

type market struct {
	open      *topics.MarketOpen // nil until the market.open is read
	status    int
	available int64
	total     int64
	lastPrice string
	lastSide  *bool
	updated   int64
	orders    map[int64]restingOrder // live limit orders by id
}

type restingOrder struct {
	buy       bool
	price     decimal.Decimal
	remaining decimal.Decimal
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{slots: make(map[uint64]*slotState)} }

func familyIndex(f topics.Family) int {
	if f == topics.WholeBlock {
		return 0
	}
	return 1
}

func (m *Model) market(slot uint64, f topics.Family) *market {
	s := m.slots[slot]
	if s == nil {
		s = &slotState{}
		m.slots[slot] = s
	}
	i := familyIndex(f)
	if s.markets[i] == nil {
		s.markets[i] = &market{orders: make(map[int64]restingOrder)}
	}
	return s.markets[i]
}

// Apply folds one record of the three topics into the model. Records the
// model does not use are ignored.
func (m *Model) Apply(e topics.Envelope) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch e.Type {
	case topics.TypeMarketOpen:
		return m.applyOpen(e)
	case topics.TypeMarketStatus:
		return m.applyStatus(e)
	case topics.TypeTradeExecuted:
		return m.applyFill(e)
	case topics.TypeOrderAccepted, topics.TypeOrderFilled, topics.TypeOrderCancelled,
		topics.TypeOrderExpired, topics.TypeOrderRejected:
		return m.applyOrder(e)
	}
	return nil
}

// applyOpen keeps the first market.open of a market, as the matcher does.
func (m *Model) applyOpen(e topics.Envelope) error {
	o, err := topics.DecodeMarketOpen(e)
	if err != nil {
		return err
	}
	if s := m.slots[o.Slot]; s == nil && m.isEvicted(o.Slot) {
		return nil
	}
	mk := m.market(o.Slot, o.Family)
	if mk.open == nil {
		mk.open = &o
		if mk.total == 0 {
			mk.total, mk.available = o.TotalPreconf, o.TotalPreconf
		}
	}
	return nil
}

func (m *Model) isEvicted(slot uint64) bool {
	return len(m.finalized) >= keepFinalized && slot < m.finalized[0]
}

func (m *Model) applyStatus(e topics.Envelope) error {
	var st topics.MarketStatus
	if err := e.UnmarshalData(&st); err != nil {
		return err
	}
	f, _, err := topics.ParseInstrumentID(st.InstrumentID)
	if err != nil {
		return err
	}
	mk := m.market(st.Slot, f)
	if st.Status < mk.status {
		return nil
	}
	mk.status, mk.available, mk.total = st.Status, st.AvailablePreconf, st.TotalPreconf
	mk.updated = e.Time
	m.setAvailable(st.Slot, st.AvailablePreconf)
	if st.Status == topics.MarketStatusTradingClosed {
		clear(mk.orders)
	}
	if s := m.slots[st.Slot]; st.Status == topics.MarketStatusFinalized && !s.final {
		s.final = true
		m.finalize(st.Slot)
	}
	return nil
}

// setAvailable copies availablePreconf to both markets of the slot: it is
// one supply (docs/matcher.md "Whole block and preconf gas").
func (m *Model) setAvailable(slot uint64, v int64) {
	if s := m.slots[slot]; s != nil {
		for _, mk := range s.markets {
			if mk != nil {
				mk.available = v
			}
		}
	}
}

func (m *Model) finalize(slot uint64) {
	m.finalized = append(m.finalized, slot)
	for len(m.finalized) > keepFinalized {
		delete(m.slots, m.finalized[0])
		m.finalized = m.finalized[1:]
	}
}

func (m *Model) applyFill(e topics.Envelope) error {
	var f topics.Fill
	if err := e.UnmarshalData(&f); err != nil {
		return err
	}
	fam, _, err := topics.ParseInstrumentID(f.InstrumentID)
	if err != nil {
		return err
	}
	mk := m.market(f.Slot, fam)
	side := f.Side
	mk.lastPrice, mk.lastSide, mk.updated = f.Price, &side, e.Time
	m.setAvailable(f.Slot, f.AvailablePreconf)
	return nil
}

// applyOrder keeps the book: an order rests while its latest state is on
// the book (1) or partially filled (13) and it is a limit order.
func (m *Model) applyOrder(e topics.Envelope) error {
	var o topics.OrderEvent
	if err := e.UnmarshalData(&o); err != nil {
		return err
	}
	fam, _, err := topics.ParseInstrumentID(o.InstrumentID)
	if err != nil {
		return err
	}
	mk := m.market(o.Slot, fam)
	mk.updated = e.Time
	resting := o.OrderType == 2 && (o.Status == topics.OrderStatusOnBook || o.Status == topics.OrderStatusPartiallyFilled)
	if !resting {
		delete(mk.orders, o.OrderID)
		return nil
	}
	price, err1 := decimal.NewFromString(o.Price)
	qty, err2 := decimal.NewFromString(o.Quantity)
	done, err3 := decimal.NewFromString(o.Fulfilled)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil
	}
	mk.orders[o.OrderID] = restingOrder{buy: o.Side, price: price, remaining: qty.Sub(done)}
	return nil
}

// bestBidAsk returns the best prices of the book; ok is false for a side
// without orders.
func (mk *market) bestBidAsk() (bid, ask decimal.Decimal, hasBid, hasAsk bool) {
	for _, o := range mk.orders {
		if !o.remaining.IsPositive() {
			continue
		}
		if o.buy && (!hasBid || o.price.GreaterThan(bid)) {
			bid, hasBid = o.price, true
		}
		if !o.buy && (!hasAsk || o.price.LessThan(ask)) {
			ask, hasAsk = o.price, true
		}
	}
	return
}

// sortedSlots returns the slots of the model in ascending order.
func (m *Model) sortedSlots() []uint64 {
	out := make([]uint64, 0, len(m.slots))
	for s := range m.slots {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
