package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// Snapshots: the state of one slot as JSON, enough to go on exactly as the
// engine that wrote it would (docs/matcher.md "Snapshots"). Everything is
// written in a fixed order (orders and positions sorted, books in priority
// order), so the same state always has the same bytes.

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
	Orders        []orderState    `json:"orders"`
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
	// Book is the resting orders in priority order (Book.Walk).
	Book []book.Order `json:"book,omitempty"`
}

type orderState struct {
	Cmd       topics.OrderPlace `json:"cmd"`
	CommandID string            `json:"commandId"`
	Family    topics.Family     `json:"family,omitempty"` // empty: rejected before it reached a market
	Price     int64             `json:"price"`
	Qty       int64             `json:"qty"`
	Filled    int64             `json:"filled"`
	Status    int               `json:"status"`
	Live      bool              `json:"live"`
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
		TotalPreconf: s.totalPreconf, Fees: s.fees.raw, Holder: s.holder, NextEvent: s.nextEvent, NextTrade: s.nextTrade,
	}
	for _, m := range s.markets {
		if m == nil {
			continue
		}
		ms := marketState{Family: m.family, Status: m.status}
		if m.book != nil {
			open := m.open
			ms.Open = &open
			m.book.Walk(func(o book.Order) bool { ms.Book = append(ms.Book, o); return true })
		}
		st.Markets = append(st.Markets, ms)
	}
	for _, o := range s.orders {
		os := orderState{Cmd: o.cmd, CommandID: o.commandID, Price: o.price, Qty: o.qty, Filled: o.filled, Status: o.status, Live: o.live}
		if o.market != nil {
			os.Family = o.market.family
		}
		st.Orders = append(st.Orders, os)
	}
	slices.SortFunc(st.Orders, func(a, b orderState) int { return cmpInt(a.Cmd.OrderID, b.Cmd.OrderID) })
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
	fees, err := parseFees(topics.MarketOpen{BuyFeeRate: st.Fees[0], PrimarySellFeeRate: st.Fees[1], SecondarySellFeeRate: st.Fees[2]})
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
	}
	if s.phase == topics.MarketStatusFinalized {
		s.orders, s.positions = nil, nil
		return s, nil
	}
	for _, os := range st.Orders {
		o := &order{cmd: os.Cmd, commandID: os.CommandID, side: sideOf(os.Cmd.Side), price: os.Price, qty: os.Qty,
			filled: os.Filled, status: os.Status, live: os.Live}
		if os.Family != "" {
			if !os.Family.Valid() || s.markets[familyOf(os.Family)] == nil {
				return nil, fmt.Errorf("order %d in market %q that is not open", os.Cmd.OrderID, os.Family)
			}
			o.market = s.markets[familyOf(os.Family)]
			if o.live && o.cmd.ClientOrderID != "" {
				o.market.clientIDs[clientKey{o.cmd.AccountID, o.cmd.ClientOrderID}] = o.cmd.OrderID
			}
		}
		s.orders[o.cmd.OrderID] = o
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
	p, err := parseParams(*ms.Open)
	if err != nil {
		return nil, err
	}
	m.params, m.open, m.book, m.clientIDs = p, *ms.Open, book.New(), make(map[clientKey]int64)
	for _, o := range ms.Book {
		if err := m.book.Restore(o); err != nil {
			return nil, err
		}
	}
	return m, nil
}
