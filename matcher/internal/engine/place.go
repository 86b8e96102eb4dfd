package engine

import (
	"fmt"

	"blockspace.exchange/matcher/internal/book"
	mkt "blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// applyPlace validates a place command, matches it and reports every
// effect: accepted or rejected, then per trade the fill and both orders'
// order.filled, then what became of the rest.
func (e *Engine) applyPlace(env topics.Envelope) error {
	cmd, err := topics.DecodeOrderPlace(env)
	if err != nil {
		return err
	}
	return e.place(inputOf(env), cmd)
}

func (e *Engine) place(in input, cmd topics.OrderPlace) error {
	fam, n, err := topics.ParseInstrumentID(cmd.InstrumentID)
	if err != nil {
		return err
	}
	s := e.slotFor(n, false)
	if s != nil && !s.firstSeen(in.id) {
		return nil
	}
	o := &order{cmd: cmd, side: sideOf(cmd.Side)}
	if s == nil {
		// No state for the slot: the market never opened here or was
		// evicted long after finalizing.
		em := e.emitterFor(&slot{n: n, transient: true}, in)
		em.reject(o, topics.CodeMarketNotOpen, "market "+cmd.InstrumentID+" is not open")
		return em.errs
	}
	em := e.emitterFor(s, in)
	if s.decided(cmd.OrderID) {
		// The same order under a second command id: it was decided once.
		return nil
	}
	m := s.markets[familyOf(fam)]
	o.market = m
	if code, msg := s.check(o, m); code != 0 {
		if code == topics.CodeMarketNotOpen {
			o.market = nil
		}
		em.reject(o, code, msg)
		if s.orders != nil && cmd.OrderID > 0 {
			s.retire(o)
		}
		return em.errs
	}
	before := s.availablePreconf()
	em.place(o)
	em.reportAvailable(before)
	return em.errs
}

// check validates the order against its market and the seller's position
// and fills in its ticks and quantity. It returns the code and message of
// the first rule broken, or 0.
func (s *slot) check(o *order, m *market) (int, string) {
	cmd := o.cmd
	if cmd.UserID <= 0 || cmd.AccountID <= 0 {
		return topics.CodeInvalidAccount, fmt.Sprintf("account %d of user %d is not a trading account", cmd.AccountID, cmd.UserID)
	}
	if m == nil || m.status != topics.MarketStatusOpen {
		return topics.CodeMarketNotOpen, "market " + cmd.InstrumentID + " is not open"
	}
	if cmd.OrderID <= 0 {
		return topics.CodeValidation, fmt.Sprintf("orderId %d is not positive", cmd.OrderID)
	}
	_, live := m.clientIDs[clientKey{cmd.AccountID, cmd.ClientOrderID}]
	c, r := m.Check(mkt.Order{Buy: cmd.Side, OrderType: cmd.OrderType, Passive: cmd.Passive,
		ClientOrderID: cmd.ClientOrderID, ClientOrderIDLive: live, Quantity: cmd.Quantity, Price: cmd.Price})
	if r.Code != 0 {
		return r.Code, r.Message
	}
	o.qty, o.price = c.Quantity, c.PriceTicks
	if o.side == book.Sell {
		if free := s.position(cmd.AccountID, familyOf(m.family)).free(); free < o.qty {
			return topics.CodeInsufficientPosition, fmt.Sprintf("quantity %d exceeds the free position %d", o.qty, free)
		}
	}
	return 0, ""
}

// place takes an order that passed the checks through the book.
func (em *emitter) place(o *order) {
	s, m := em.s, o.market
	tif := book.GoodTillCancel
	switch o.cmd.OrderType {
	case topics.OrderTypeMarket:
		tif = book.ImmediateOrCancel
	case topics.OrderTypeFillOrKill:
		tif = book.FillOrKill
	}
	bo := book.Order{ID: o.cmd.OrderID, Account: o.cmd.AccountID, Side: o.side, Price: o.price, Qty: o.qty}
	res, events := m.book.Place(bo, tif, o.cmd.Passive, em.e.events[:0])
	em.e.events = events
	if res.Outcome == book.PostOnlyRejected {
		s.retire(o)
		em.reject(o, topics.CodePassiveWouldTake, "passive order would trade on arrival")
		return
	}
	s.orders[o.cmd.OrderID] = o
	o.live = true
	if o.side == book.Sell {
		s.position(o.cmd.AccountID, familyOf(m.family)).locked += o.qty
	}
	if o.cmd.ClientOrderID != "" {
		m.clientIDs[clientKey{o.cmd.AccountID, o.cmd.ClientOrderID}] = o.cmd.OrderID
	}
	o.status = topics.OrderStatusPending
	if res.Outcome == book.Rested && res.Filled == 0 {
		o.status = topics.OrderStatusOnBook
	}
	em.orderEvent(topics.TypeOrderAccepted, o, orderEventOpts{})
	for _, ev := range events {
		em.bookEvent(o, ev)
	}
	em.settleOutcome(o, res)
}

// settleOutcome reports what became of the part of o that did not trade.
func (em *emitter) settleOutcome(o *order, res book.Result) {
	switch res.Outcome {
	case book.Rested, book.Filled:
		if res.Outcome == book.Filled {
			em.s.release(o)
		}
	case book.RemainderCancelled:
		em.s.release(o)
		em.systemCancel(o, topics.ReasonUnfilledRemainder)
	case book.Killed:
		em.s.release(o)
		em.systemCancel(o, topics.ReasonFillOrKill)
	}
}
