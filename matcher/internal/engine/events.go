package engine

import (
	"strconv"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// orderEventOpts are the parts of an order event that depend on what
// happened.
type orderEventOpts struct {
	code      int
	reason    string
	message   string
	commandID string // default: the input's id
	tradeID   int64
	lastPrice string
	lastQty   int64
	lastFee   string
	// lastPreconf is the preconf gas of a whole-block fill ("" otherwise).
	lastPreconf string
}

func (em *emitter) orderEvent(typ string, o *order, opts orderEventOpts) {
	// The payload is built in the engine's scratch space: it is encoded
	// before the next one is built.
	ev := &em.e.scratch.event
	*ev = topics.OrderEvent{
		CommandID:     em.in.id,
		OrderID:       o.cmd.OrderID,
		ClientOrderID: o.cmd.ClientOrderID,
		UserID:        o.cmd.UserID,
		AccountID:     o.cmd.AccountID,
		Slot:          em.s.n,
		Side:          o.cmd.Side,
		OrderType:     o.cmd.OrderType,
		Passive:       o.cmd.Passive,
		Price:         o.cmd.Price,
		Quantity:      o.cmd.Quantity,
		Fulfilled:     strconv.FormatInt(o.filled, 10),
		Status:        o.status,
		Reason:        opts.reason,
		Message:       opts.message,
	}
	if o.market != nil {
		ev.MarketID, ev.InstrumentID = o.market.id, o.market.instrument
		if o.cmd.Price == "" && o.price != 0 {
			ev.Price = o.market.priceString(o.price)
		}
	} else {
		ev.InstrumentID = o.cmd.InstrumentID
	}
	if opts.commandID != "" {
		ev.CommandID = opts.commandID
	}
	if opts.code != 0 {
		em.e.scratch.code = opts.code
		ev.ErrorCode = &em.e.scratch.code
	}
	if opts.tradeID != 0 {
		ev.TradeID = opts.tradeID
		ev.LastPrice = opts.lastPrice
		ev.LastQuantity = strconv.FormatInt(opts.lastQty, 10)
		ev.LastFee, ev.LastPreconfQuantity = opts.lastFee, opts.lastPreconf
	}
	em.event(typ, ev)
}

// reject answers a place command that failed a check.
func (em *emitter) reject(o *order, code int, message string) {
	o.status = topics.OrderStatusError
	em.orderEvent(topics.TypeOrderRejected, o, orderEventOpts{code: code, message: message})
}

// systemCancel reports an order the matcher cancelled.
func (em *emitter) systemCancel(o *order, reason string) {
	o.status = topics.OrderStatusCancelledBySys
	em.orderEvent(topics.TypeOrderCancelled, o, orderEventOpts{code: topics.CodeAutoCancelled, reason: reason})
}

// fillStatus is the status of an order after a fill.
func fillStatus(o *order) int {
	if o.filled == o.qty {
		return topics.OrderStatusDone
	}
	return topics.OrderStatusPartiallyFilled
}

func sideOf(buy bool) book.Side {
	if buy {
		return book.Buy
	}
	return book.Sell
}
