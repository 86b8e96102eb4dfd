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

// keepTrades is how many recent trades each market keeps.
const keepTrades = 100

// Model holds the markets of the live slots. Apply and Flush are called by
// one consumer goroutine; reads come from request goroutines; one RWMutex
// guards everything, and the listener is called with it held.
type Model struct {
	mu        sync.RWMutex
	slots     map[uint64]*slotState
	finalized []uint64 // in the order they finalized, for eviction
	listen    Listener
}

type slotState struct {
	markets [2]*market // whole block, inclusion preconf
	final   bool
}

type market struct {
	family    topics.Family
	slot      uint64
	open      *topics.MarketOpen // nil until the market.open is read
	status    int
	shown     bool // a MarketChange announced it
	available int64
	total     int64
	lastPrice string
	lastSide  *bool
	updated   int64
	orders    map[int64]restingOrder // live limit orders by id
	created   map[int64]int64        // first event time of orders not final yet
	book      book
	// pendingCmd is the matcher input whose book changes are not flushed
	// yet: one input's changes go out as one update.
	pendingCmd string
	trades     []Trade // newest last, at most keepTrades
	stats      tradeStats
	tickerDue  bool // the ticker changed since the last flush
}

type restingOrder struct {
	ev        topics.OrderEvent
	price     decimal.Decimal
	remaining decimal.Decimal
	created   int64
	updated   int64
}

// tradeStats summarise a market's trades since it opened.
type tradeStats struct {
	open, high, low decimal.Decimal
	volume          decimal.Decimal
	count           int
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{slots: make(map[uint64]*slotState), listen: nopListener{}}
}

// SetListener makes l learn every later change. Call it before the feed
// runs.
func (m *Model) SetListener(l Listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listen = l
}

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
		s.markets[i] = &market{family: f, slot: slot, orders: make(map[int64]restingOrder),
			created: make(map[int64]int64), book: newBook()}
	}
	return s.markets[i]
}

// Apply folds one record of the three topics into the model. Records the
// model does not use are ignored. Book and ticker changes are held until
// the record of another matcher input touches the market, or Flush.
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
	case topics.TypeCancelRejected:
		return m.applyCancelRejected(e)
	}
	return nil
}

// Flush publishes the held book and ticker changes of every market. The
// feed calls it after each batch of records it polled.
func (m *Model) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.slots {
		for _, mk := range s.markets {
			if mk != nil {
				m.flush(mk)
			}
		}
	}
}

// flush publishes mk's held changes: one book update with the new state
// of every level that changed, then the ticker.
func (m *Model) flush(mk *market) {
	mk.pendingCmd = ""
	if mk.book.isDirty() {
		changed := mk.book.take()
		if mk.visible() {
			mk.book.seq++
			m.listen.BookChanged(BookUpdate{Family: mk.family, Slot: mk.slot, Time: mk.updated,
				InstrumentID: topics.InstrumentID(mk.family, mk.slot), Seq: mk.book.seq,
				Bids: changed[bids], Asks: changed[asks]})
		}
		mk.tickerDue = true
	}
	if mk.tickerDue {
		mk.tickerDue = false
		if mk.visible() {
			m.listen.TickerChanged(mk.ticker())
		}
	}
}

// announce tells the listener about a market that became visible or
// changed status.
func (m *Model) announce(mk *market, at int64) {
	if !mk.visible() {
		return
	}
	mk.shown = true
	var view any
	if mk.family == topics.WholeBlock {
		view = mk.wholeBlock()
	} else {
		view = mk.preconf()
	}
	m.listen.MarketChanged(MarketChange{Family: mk.family, InstrumentID: topics.InstrumentID(mk.family, mk.slot),
		Action: statusAction(mk.status), Time: at, Market: view})
	mk.tickerDue = true
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
		if mk.visible() {
			m.announce(mk, e.Time)
			m.flush(mk)
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
	m.flush(mk)
	changed := st.Status != mk.status
	mk.status, mk.available, mk.total = st.Status, st.AvailablePreconf, st.TotalPreconf
	mk.updated = e.Time
	m.setAvailable(st.Slot, st.AvailablePreconf)
	if st.Status >= topics.MarketStatusTradingClosed {
		for id, o := range mk.orders {
			mk.unrest(id, o)
		}
		clear(mk.created)
	}
	if changed || !mk.shown {
		m.announce(mk, e.Time)
	}
	m.flush(mk)
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
			if mk != nil && mk.available != v {
				mk.available = v
				mk.tickerDue = true
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
	t := Trade{Family: fam, InstrumentID: f.InstrumentID, TrxID: f.TradeID, Side: f.Side, Price: f.Price,
		Quantity: f.Quantity, PreconfQuantity: f.PreconfQuantity, Date: e.Time}
	if len(mk.trades) == keepTrades {
		mk.trades = append(mk.trades[:0], mk.trades[1:]...)
	}
	mk.trades = append(mk.trades, t)
	mk.stats.add(f.Price, f.Quantity)
	mk.tickerDue = true
	if mk.visible() {
		m.listen.Traded(t)
	}
	return nil
}

func (s *tradeStats) add(price, quantity string) {
	p, err1 := decimal.NewFromString(price)
	q, err2 := decimal.NewFromString(quantity)
	if err1 != nil || err2 != nil {
		return
	}
	if s.count == 0 {
		s.open, s.high, s.low = p, p, p
	}
	s.high, s.low = decimal.Max(s.high, p), decimal.Min(s.low, p)
	s.volume = s.volume.Add(q)
	s.count++
}

// applyOrder keeps the book: a limit order rests at its price with
// quantity − fulfilled while its latest state is on the book (1) or
// partially filled (13); any other state takes it off. Changes of one
// matcher input are published together, when the next input touches the
// market or at Flush.
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
	if mk.pendingCmd != o.CommandID {
		m.flush(mk)
		mk.pendingCmd = o.CommandID
	}
	mk.updated = e.Time
	created, seen := mk.created[o.OrderID]
	if !seen {
		created = e.Time
	}
	if old, ok := mk.orders[o.OrderID]; ok {
		mk.unrest(o.OrderID, old)
	}
	if topics.IsFinalOrderStatus(o.Status) {
		delete(mk.created, o.OrderID)
	} else if mk.status < topics.MarketStatusTradingClosed {
		mk.created[o.OrderID] = created
	}
	resting := o.OrderType == topics.OrderTypeLimit &&
		(o.Status == topics.OrderStatusOnBook || o.Status == topics.OrderStatusPartiallyFilled)
	if resting && mk.status < topics.MarketStatusTradingClosed {
		price, err1 := decimal.NewFromString(o.Price)
		qty, err2 := decimal.NewFromString(o.Quantity)
		done, err3 := decimal.NewFromString(o.Fulfilled)
		if err1 == nil && err2 == nil && err3 == nil && qty.GreaterThan(done) {
			mk.rest(restingOrder{ev: o, price: price, remaining: qty.Sub(done), created: created, updated: e.Time})
		}
	}
	m.listen.OrderChanged(OrderUpdate{UserID: o.UserID, Family: fam, Action: orderActions[e.Type], Time: e.Time,
		Order: orderView(&o, created, e.Time)})
	return nil
}

func (m *Model) applyCancelRejected(e topics.Envelope) error {
	var c topics.CancelRejected
	if err := e.UnmarshalData(&c); err != nil {
		return err
	}
	fam, slot, err := topics.ParseInstrumentID(c.InstrumentID)
	if err != nil {
		return err
	}
	code := c.Code
	m.listen.OrderChanged(OrderUpdate{UserID: c.UserID, Family: fam, Action: ActionCancelRejected, Time: e.Time,
		Order: Order{OrderID: c.OrderID, ClientOrderID: c.ClientOrderID, AccountID: c.AccountID,
			MarketID: topics.MarketID(fam, slot), InstrumentID: c.InstrumentID, ErrorCode: &code,
			Message: c.Message, UpdateDate: e.Time}})
	return nil
}

func (mk *market) rest(o restingOrder) {
	mk.orders[o.ev.OrderID] = o
	mk.book.add(sideIndex(o.ev.Side), o.price, o.remaining, 1)
}

func (mk *market) unrest(id int64, o restingOrder) {
	delete(mk.orders, id)
	mk.book.add(sideIndex(o.ev.Side), o.price, o.remaining.Neg(), -1)
}

// bestBidAsk returns the best prices of the book; ok is false for a side
// without orders.
func (mk *market) bestBidAsk() (bid, ask decimal.Decimal, hasBid, hasAsk bool) {
	bid, hasBid = mk.book.best(bids)
	ask, hasAsk = mk.book.best(asks)
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
