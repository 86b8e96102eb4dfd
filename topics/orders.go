package topics

import (
	"fmt"
	"time"
)

// OrderCommandVersion is the payload version of the order commands
// (order.place, order.cancel, order.cancel_batch, order.cancel_all).
//
// The envelope id of an order command is its command id: ingress chooses it
// once per accepted request item and the outbox relay republishes it
// unchanged, so the matcher drops a republished command as a duplicate.
const OrderCommandVersion = 1

// Order types (docs/api.md "Values and identifiers").
const (
	OrderTypeMarket     = 1
	OrderTypeLimit      = 2
	OrderTypeFillOrKill = 3
)

// MaxClientOrderIDLen is the longest clientOrderId (docs/api.md "Values and
// identifiers").
const MaxClientOrderIDLen = 32

// CheckClientOrderID reports what makes id unusable as a clientOrderId:
// more than MaxClientOrderIDLen characters, or a character outside
// printable ASCII (space excluded). "" is no clientOrderId and passes.
// Ingress and the matcher apply the same rule.
func CheckClientOrderID(id string) error {
	if len(id) > MaxClientOrderIDLen {
		return fmt.Errorf("clientOrderId is longer than %d characters", MaxClientOrderIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("clientOrderId has a character outside printable ASCII")
		}
	}
	return nil
}

// OrderPlace is the payload of a TypeOrderPlace command: one item of a
// place-order request (docs/api.md "Order entry (bearer)") with the ids
// ingress assigned. A buyer's funds are reserved before it is published; a
// seller's position is checked by the matcher, which holds the slot's
// positions.
//
//topics:appendjson
//topics:readjson
type OrderPlace struct {
	OrderID      int64  `json:"orderId"`
	UserID       int64  `json:"userId"`
	AccountID    int64  `json:"accountId"`
	InstrumentID string `json:"instrumentId"`
	// Side is true for a buy.
	Side      bool `json:"side"`
	OrderType int  `json:"orderType"`
	// Quantity is "1" for whole-block orders and an integer number of gas
	// units for inclusion-preconf orders.
	Quantity string `json:"quantity"`
	// Price is required for limit and fill-or-kill orders; on a market
	// order it is the worst acceptable price.
	Price         string `json:"price,omitempty"`
	ClientOrderID string `json:"clientOrderId,omitempty"`
	// Passive is post-only: the order is rejected if it would trade on
	// arrival.
	Passive bool `json:"passive"`
	Source  int  `json:"source,omitempty"`
}

// OrderCancel is the payload of a TypeOrderCancel command. It names the
// order by OrderID or, when OrderID is zero, by ClientOrderID.
type OrderCancel struct {
	UserID        int64  `json:"userId"`
	AccountID     int64  `json:"accountId"`
	InstrumentID  string `json:"instrumentId"`
	OrderID       int64  `json:"orderId,omitempty"`
	ClientOrderID string `json:"clientOrderId,omitempty"`
}

// OrderCancelBatch is the payload of a TypeOrderCancelBatch command.
type OrderCancelBatch struct {
	UserID         int64    `json:"userId"`
	AccountID      int64    `json:"accountId"`
	InstrumentID   string   `json:"instrumentId"`
	OrderIDs       []int64  `json:"orderIds,omitempty"`
	ClientOrderIDs []string `json:"clientOrderIds,omitempty"`
}

// OrderCancelAll is the payload of a TypeOrderCancelAll command. Ingress
// publishes one per live market of the family, so InstrumentID is always
// set and the command stays on its slot's partition.
type OrderCancelAll struct {
	UserID       int64  `json:"userId"`
	AccountID    int64  `json:"accountId"`
	InstrumentID string `json:"instrumentId"`
}

// OrderCommandEnvelope wraps an order command payload; typ is one of the
// four order command types and id the command id.
func OrderCommandEnvelope(typ, id string, at time.Time, payload any) (Envelope, error) {
	switch typ {
	case TypeOrderPlace, TypeOrderCancel, TypeOrderCancelBatch, TypeOrderCancelAll:
	default:
		return Envelope{}, fmt.Errorf("order command envelope: %q is not an order command", typ)
	}
	return NewEnvelope(typ, OrderCommandVersion, id, at, payload)
}

// DecodeOrderPlace returns the payload of a TypeOrderPlace envelope.
func DecodeOrderPlace(e Envelope) (OrderPlace, error) {
	var p OrderPlace
	err := decodeVersioned(e, TypeOrderPlace, OrderCommandVersion, &p)
	return p, err
}

// DecodeOrderCancel returns the payload of a TypeOrderCancel envelope.
func DecodeOrderCancel(e Envelope) (OrderCancel, error) {
	var c OrderCancel
	err := decodeVersioned(e, TypeOrderCancel, OrderCommandVersion, &c)
	return c, err
}

// DecodeOrderCancelBatch returns the payload of a TypeOrderCancelBatch
// envelope.
func DecodeOrderCancelBatch(e Envelope) (OrderCancelBatch, error) {
	var c OrderCancelBatch
	err := decodeVersioned(e, TypeOrderCancelBatch, OrderCommandVersion, &c)
	return c, err
}

// DecodeOrderCancelAll returns the payload of a TypeOrderCancelAll envelope.
func DecodeOrderCancelAll(e Envelope) (OrderCancelAll, error) {
	var c OrderCancelAll
	err := decodeVersioned(e, TypeOrderCancelAll, OrderCommandVersion, &c)
	return c, err
}
