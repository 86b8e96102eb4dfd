package engine

import (
	"fmt"

	"blockspace.exchange/topics"
)

// cancelTarget names one order of a cancel command.
type cancelTarget struct {
	orderID  int64
	clientID string
}

// cancelCmd is what the three cancel commands share.
type cancelCmd struct {
	user, account int64
	instrument    string
	reason        string
}

func (e *Engine) applyCancel(in topics.Envelope) error {
	c, err := topics.DecodeOrderCancel(in)
	if err != nil {
		return err
	}
	cmd := cancelCmd{c.UserID, c.AccountID, c.InstrumentID, topics.ReasonUser}
	return e.cancel(in, cmd, []cancelTarget{{c.OrderID, c.ClientOrderID}})
}

// applyCancelBatch cancels by order ids first, then by client order ids,
// each in the order given. Naming an order twice answers the second 109.
func (e *Engine) applyCancelBatch(in topics.Envelope) error {
	c, err := topics.DecodeOrderCancelBatch(in)
	if err != nil {
		return err
	}
	targets := make([]cancelTarget, 0, len(c.OrderIDs)+len(c.ClientOrderIDs))
	for _, id := range c.OrderIDs {
		targets = append(targets, cancelTarget{orderID: id})
	}
	for _, id := range c.ClientOrderIDs {
		targets = append(targets, cancelTarget{clientID: id})
	}
	return e.cancel(in, cancelCmd{c.UserID, c.AccountID, c.InstrumentID, topics.ReasonCancelBatch}, targets)
}

// applyCancelAll cancels every live order of the account in the market, in
// order id order. With none there is nothing to report.
func (e *Engine) applyCancelAll(in topics.Envelope) error {
	c, err := topics.DecodeOrderCancelAll(in)
	if err != nil {
		return err
	}
	fam, n, err := topics.ParseInstrumentID(c.InstrumentID)
	if err != nil {
		return err
	}
	s := e.slots[n]
	if s == nil || !s.firstSeen(in.ID) || c.AccountID <= 0 {
		return nil
	}
	m := s.openMarket(fam)
	if m == nil {
		return nil
	}
	em := e.emitterFor(s, inputOf(in))
	before := s.availablePreconf()
	for _, o := range s.liveOrders(m, c.AccountID) {
		em.userCancel(o, topics.ReasonCancelAll)
	}
	em.reportAvailable(before)
	return em.errs
}

func (e *Engine) cancel(in topics.Envelope, cmd cancelCmd, targets []cancelTarget) error {
	fam, n, err := topics.ParseInstrumentID(cmd.instrument)
	if err != nil {
		return err
	}
	s := e.slots[n]
	if s != nil && !s.firstSeen(in.ID) {
		return nil
	}
	if s == nil {
		s = &slot{n: n, transient: true}
	}
	em := e.emitterFor(s, inputOf(in))
	before := s.availablePreconf()
	for _, t := range targets {
		o, code := s.findForCancel(fam, cmd.account, t)
		if code != 0 {
			em.cancelRejected(cmd, t, code)
			continue
		}
		em.userCancel(o, cmd.reason)
	}
	em.reportAvailable(before)
	return em.errs
}

// findForCancel returns the live order a cancel names, or the code that
// answers the cancel: 108 when the account has no such order in the
// market, 109 when it is no longer live.
func (s *slot) findForCancel(fam topics.Family, account int64, t cancelTarget) (*order, int) {
	m := s.markets[familyOf(fam)]
	if m == nil || s.orders == nil {
		return nil, topics.CodeNoSuchOrder
	}
	id := t.orderID
	if id == 0 && t.clientID != "" {
		id = m.clientIDs[clientKey{account, t.clientID}]
	}
	if o := s.orders[id]; o != nil {
		if o.market != m || o.cmd.AccountID != account {
			return nil, topics.CodeNoSuchOrder
		}
		return o, 0
	}
	// An unknown client order id is either never used or its order is
	// done: client ids are only unique among live orders.
	if d, ok := s.done[id]; ok && t.orderID != 0 && d.market == familyOf(fam) && d.account == account {
		return nil, topics.CodeOrderDone
	}
	return nil, topics.CodeNoSuchOrder
}

func (em *emitter) userCancel(o *order, reason string) {
	em.s.remove(o)
	o.status = topics.OrderStatusCancelledByUser
	em.orderEvent(topics.TypeOrderCancelled, o, orderEventOpts{code: topics.CodeManuallyCancelled, reason: reason})
}

func (em *emitter) cancelRejected(cmd cancelCmd, t cancelTarget, code int) {
	msg := fmt.Sprintf("order %d is not a live order of account %d", t.orderID, cmd.account)
	if t.orderID == 0 {
		msg = fmt.Sprintf("clientOrderId %q is not a live order of account %d", t.clientID, cmd.account)
	}
	if code == topics.CodeOrderDone {
		msg = fmt.Sprintf("order %d is already done or cancelled", t.orderID)
	}
	em.event(topics.TypeCancelRejected, &topics.CancelRejected{
		CommandID: em.in.id, UserID: cmd.user, AccountID: cmd.account, InstrumentID: cmd.instrument,
		OrderID: t.orderID, ClientOrderID: t.clientID, Code: code, Message: msg,
	})
}
