package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// Snapshots: the state of one slot as JSON, enough to go on exactly as the
// engine that wrote it would (docs/matcher.md "Snapshots"), and no more:
// live orders in full, done orders as the ids, accounts and markets that
// duplicate places and late cancels are answered from. Everything is
// written in a fixed order (books in priority order, the rest sorted), so
// the same state always has the same bytes.

// slotState is the snapshot of a slot.
type slotState struct {
	Slot          uint64          `json:"slot"`
	Issued        bool            `json:"issued"`
	Phase         int             `json:"phase"`
	SellerUser    int64           `json:"sellerUserId"`
	SellerAccount int64           `json:"sellerAccountId"`
	TotalPreconf  int64           `json:"totalPreconf"`
	Fees          [3]string       `json:"fees"` // buy, primary sell, secondary sell, as market.open wrote them
	Holder        int64           `json:"holder"`
	Markets       []marketState   `json:"markets"`
	Done          []doneState     `json:"done,omitempty"`
	Positions     []positionState `json:"positions"`
	Seen          []string        `json:"seen"`
	NextEvent     uint64          `json:"nextEvent"`
	NextTrade     int64           `json:"nextTrade"`
}

type marketState struct {
	Family topics.Family `json:"family"`
	Status int           `json:"status"`
	// Open is the market.open that opened the market; absent once the
	// slot finalized and the market's book was freed.
	Open *topics.MarketOpen `json:"open,omitempty"`
	// Orders are the live orders of the market, all on its book, in the
	// book's priority order (Book.Walk).
	Orders []orderState `json:"orders,omitempty"`
}

// orderState is a live order. Its book entry is derived from it: the
// remaining quantity Qty - Filled at Price.
type orderState struct {
	Cmd    topics.OrderPlace `json:"cmd"`
	Price  int64             `json:"price"`
	Qty    int64             `json:"qty"`
	Filled int64             `json:"filled"`
	Status int               `json:"status"`
}

// doneState holds the done orders of one account in one market (Family
// empty: rejected before they reached a market), ids ascending.
type doneState struct {
	Account int64         `json:"account"`
	Family  topics.Family `json:"family,omitempty"`
	IDs     []int64       `json:"ids"`
}

type positionState struct {
	Account int64  `json:"account"`
	Family  family `json:"family"`
	Qty     int64  `json:"qty"`
	Locked  int64  `json:"locked"`
}

// Slots returns the slots the engine holds state for, in ascending order.
func (e *Engine) Slots() []uint64 {
	out := make([]uint64, 0, len(e.slots))
	for n := range e.slots {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// SnapshotSlot returns the state of slot n as a JSON object, or false when
// the engine holds no state for it.
func (e *Engine) SnapshotSlot(n uint64) (json.RawMessage, bool, error) {
	s := e.slots[n]
	if s == nil {
		return nil, false, nil
	}
	st := slotState{
		Slot: s.n, Issued: s.issued, Phase: s.phase, SellerUser: s.sellerUser, SellerAccount: s.sellerAccount,
		TotalPreconf: s.totalPreconf, Fees: s.fees.Raw, Holder: s.holder, NextEvent: s.nextEvent, NextTrade: s.nextTrade,
	}
	markets, err := s.marketStates()
	if err != nil {
		return nil, false, fmt.Errorf("snapshot slot %d: %w", n, err)
	}
	st.Markets = markets
	st.Done = s.doneStates()
	for k, p := range s.positions {
		st.Positions = append(st.Positions, positionState{Account: k.account, Family: k.family, Qty: p.qty, Locked: p.locked})
	}
	slices.SortFunc(st.Positions, func(a, b positionState) int {
		if c := cmpInt(a.Account, b.Account); c != 0 {
			return c
		}
		return cmpInt(int64(a.Family), int64(b.Family))
	})
	for id := range s.seen {
		st.Seen = append(st.Seen, id)
	}
	slices.Sort(st.Seen)
	b, err := json.Marshal(st)
	if err != nil {
		return nil, false, fmt.Errorf("snapshot slot %d: %w", n, err)
	}
	return b, true, nil
}

// marketStates returns the slot's markets with their live orders in
// priority order. Every live order rests on its market's book.
func (s *slot) marketStates() ([]marketState, error) {
	var out []marketState
	live, stray := 0, 0
	for _, m := range s.markets {
		if m == nil {
			continue
		}
		ms := marketState{Family: m.family, Status: m.status}
		if m.book != nil {
			open := m.open
			ms.Open = &open
			m.book.Walk(func(bo book.Order) bool {
				o := s.orders[bo.ID]
				if o == nil {
					stray++
					return true
				}
				ms.Orders = append(ms.Orders, orderState{Cmd: o.cmd, Price: o.price, Qty: o.qty, Filled: o.filled, Status: o.status})
				return true
			})
			live += len(ms.Orders)
		}
		out = append(out, ms)
	}
	if live != len(s.orders) || stray != 0 {
		return nil, fmt.Errorf("%d live orders, %d of them on the books, and %d book entries without an order", len(s.orders), live, stray)
	}
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RestoreSlot loads a slot's state written by SnapshotSlot, replacing any
// state the engine held for the slot.
func (e *Engine) RestoreSlot(state json.RawMessage) error {
	var st slotState
	if err := json.Unmarshal(state, &st); err != nil {
		return fmt.Errorf("restore slot: %w", err)
	}
	s, err := restoreSlot(st)
	if err != nil {
		return fmt.Errorf("restore slot %d: %w", st.Slot, err)
	}
	e.slots[s.n] = s
	e.finalized = e.finalized[:0]
	for _, n := range e.Slots() {
		if e.slots[n].phase == topics.MarketStatusFinalized {
			e.finalized = append(e.finalized, n)
		}
	}
	return nil
}

func restoreSlot(st slotState) (*slot, error) {
	s := newSlot(st.Slot)
	s.issued, s.phase, s.sellerUser, s.sellerAccount = st.Issued, st.Phase, st.SellerUser, st.SellerAccount
	s.totalPreconf, s.holder, s.nextEvent, s.nextTrade = st.TotalPreconf, st.Holder, st.NextEvent, st.NextTrade
	fees, err := parseFees(st.Fees[0], st.Fees[1], st.Fees[2])
	if err != nil {
		return nil, err
	}
	s.fees = fees
	for _, id := range st.Seen {
		s.seen[id] = struct{}{}
	}
	for _, ms := range st.Markets {
		if !ms.Family.Valid() || s.markets[familyOf(ms.Family)] != nil {
			return nil, fmt.Errorf("market %q unknown or twice", ms.Family)
		}
		m, err := restoreMarket(st.Slot, ms)
		if err != nil {
			return nil, err
		}
		s.markets[familyOf(ms.Family)] = m
		if err := s.restoreLive(m, ms.Orders); err != nil {
			return nil, err
		}
	}
	if s.phase == topics.MarketStatusFinalized {
		s.orders, s.done, s.positions = nil, nil, nil
		return s, nil
	}
	if err := s.restoreDone(st.Done); err != nil {
		return nil, err
	}
	for _, p := range st.Positions {
		s.positions[positionKey{p.Account, p.Family}] = &position{qty: p.Qty, locked: p.Locked}
	}
	return s, nil
}

func restoreMarket(n uint64, ms marketState) (*market, error) {
	m := &market{family: ms.Family, id: topics.MarketID(ms.Family, n), instrument: topics.InstrumentID(ms.Family, n), status: ms.Status}
	if ms.Open == nil {
		return m, nil // freed when the slot finalized
	}
	p, fees, err := newParams(*ms.Open)
	if err != nil {
		return nil, err
	}
	m.params, m.fees, m.open, m.book, m.clientIDs = p, fees, *ms.Open, book.New(), make(map[clientKey]int64)
	return m, nil
}

// restoreLive rests the live orders of m on its book, in the order given,
// which is the book's priority order.
func (s *slot) restoreLive(m *market, live []orderState) error {
	if m.book == nil && len(live) > 0 {
		return fmt.Errorf("live orders in the freed market %q", m.family)
	}
	for _, os := range live {
		o := &order{cmd: os.Cmd, market: m, side: sideOf(os.Cmd.Side), price: os.Price, qty: os.Qty,
			filled: os.Filled, status: os.Status, live: true}
		id := o.cmd.OrderID
		if id <= 0 || s.decided(id) {
			return fmt.Errorf("live order %d not positive or twice", id)
		}
		bo := book.Order{ID: id, Account: o.cmd.AccountID, Side: o.side, Price: o.price, Qty: o.qty - o.filled}
		if err := m.book.Restore(bo); err != nil {
			return err
		}
		s.orders[id] = o
		if o.cmd.ClientOrderID != "" {
			m.clientIDs[clientKey{o.cmd.AccountID, o.cmd.ClientOrderID}] = id
		}
	}
	return nil
}

// restoreDone loads the done orders, which must name markets that opened.
func (s *slot) restoreDone(done []doneState) error {
	for _, ds := range done {
		f := noMarket
		if ds.Family != "" {
			if !ds.Family.Valid() || s.markets[familyOf(ds.Family)] == nil {
				return fmt.Errorf("done orders in market %q that never opened", ds.Family)
			}
			f = familyOf(ds.Family)
		}
		for _, id := range ds.IDs {
			if id <= 0 || s.decided(id) {
				return fmt.Errorf("done order %d not positive or twice", id)
			}
			s.done[id] = doneOrder{account: ds.Account, market: f}
		}
	}
	return nil
}

// doneStates groups the done orders by account and market, both
// ascending (orders rejected before they reached a market first), ids
// ascending: the same orders always give the same bytes.
func (s *slot) doneStates() []doneState {
	groups := make(map[doneOrder][]int64)
	for id, d := range s.done {
		groups[d] = append(groups[d], id)
	}
	keys := make([]doneOrder, 0, len(groups))
	for d := range groups {
		keys = append(keys, d)
	}
	slices.SortFunc(keys, func(a, b doneOrder) int {
		if c := cmpInt(a.account, b.account); c != 0 {
			return c
		}
		return cmpInt(int64(a.market), int64(b.market))
	})
	out := make([]doneState, len(keys))
	for i, d := range keys {
		ids := groups[d]
		slices.Sort(ids)
		out[i] = doneState{Account: d.account, IDs: ids}
		if d.market != noMarket {
			out[i].Family = s.markets[d.market].family
		}
	}
	return out
}
