// Package settlement settles the matcher's output: order events and fills,
// with the market.open commands that issue a slot to its seller. It
// applies them exactly once to orders, trades, positions and the ledger,
// a whole batch in one Postgres transaction (the caller stores the
// consumer offsets in it), and gives the same final state whatever order
// the three topics deliver their records in:
//
//   - an order row takes the state of an event only if it is newer
//     (fulfilled grew, or the status moved on) and never leaves a final
//     status;
//   - a fill is one journal entry ("fill:<tradeId>"), so it settles once;
//     a fill of a slot not yet issued waits in parked_fills and is applied
//     when the slot is issued;
//   - a buy order's unused reservation is unlocked once, by whichever of
//     its final event and its last fill comes second;
//   - a position's locked quantity is recomputed from its live sell orders
//     whenever the position or one of those orders changes.
//
// docs/operations.md "Trading settlement" describes the rules for
// operators.
package settlement

import (
	"fmt"
	"math"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Wanted reports whether a record of topic with envelope type typ is one
// the settlement reads. It lets the consumer skip the rest (order
// commands, ticks, book changes) by their type header without decoding
// them.
func Wanted(topic, typ string) bool {
	switch topic {
	case topics.Orders:
		return typ == topics.TypeMarketOpen
	case topics.OrderEvents:
		switch typ {
		case topics.TypeOrderAccepted, topics.TypeOrderRejected, topics.TypeOrderFilled, topics.TypeOrderCancelled,
			topics.TypeOrderExpired, topics.TypeMarketStatus, topics.TypeCancelRejected:
			return true
		}
	case topics.Fills:
		return typ == topics.TypeTradeExecuted
	}
	return false
}

// Record is one decoded record. Exactly one of the payloads is set, or
// Invalid says why the record cannot be applied.
type Record struct {
	ID   string // envelope id
	Type string
	At   time.Time
	// Value is the record's bytes, kept to park a fill.
	Value []byte

	Open           *topics.MarketOpen
	Status         *topics.MarketStatus
	Event          *Event
	Fill           *Fill
	CancelRejected *topics.CancelRejected

	// Invalid is set when the record is of a wanted type but cannot be
	// applied (a payload that does not decode, a value out of range).
	Invalid string
}

// Event is an order event with its amounts parsed.
type Event struct {
	topics.OrderEvent
	quantity, fulfilled decimal.Decimal
	price               *decimal.Decimal
}

// Fill is a fill with its amounts parsed and its sides named.
type Fill struct {
	topics.Fill
	family                                        topics.Family
	price, quantity, preconf, buyerFee, sellerFee decimal.Decimal
	// value = price × quantity.
	value         decimal.Decimal
	buyer, seller side
	// at is the envelope time: when the matcher's input was accepted.
	at time.Time
}

// side is the buyer's or the seller's part of a fill.
type side struct{ order, user, account int64 }

// Decode turns the envelope of a wanted record of topic into a Record. A
// payload that cannot be applied is returned with Invalid set, not as an
// error, so that it is recorded once and never blocks its partition.
func Decode(topic string, e topics.Envelope, value []byte) Record {
	r := Record{ID: e.ID, Type: e.Type, At: e.At(), Value: value}
	var err error
	switch e.Type {
	case topics.TypeMarketOpen:
		var o topics.MarketOpen
		if o, err = topics.DecodeMarketOpen(e); err == nil {
			r.Open = &o
		}
	case topics.TypeMarketStatus:
		r.Status, err = decodeStatus(e)
	case topics.TypeCancelRejected:
		r.CancelRejected = new(topics.CancelRejected)
		err = decodeMatcher(e, r.CancelRejected)
	case topics.TypeTradeExecuted:
		if r.Fill, err = decodeFill(e); err == nil {
			r.Fill.at = r.At
		}
	case topics.TypeOrderAccepted, topics.TypeOrderRejected, topics.TypeOrderFilled, topics.TypeOrderCancelled, topics.TypeOrderExpired:
		r.Event, err = decodeEvent(e)
	default:
		err = fmt.Errorf("settlement does not apply %q", e.Type)
	}
	if err == nil && !Wanted(topic, e.Type) {
		err = fmt.Errorf("%s does not carry %s", topic, e.Type)
	}
	if err != nil {
		r.Open, r.Status, r.Event, r.Fill, r.CancelRejected = nil, nil, nil, nil, nil
		r.Invalid = err.Error()
	}
	return r
}

func decodeMatcher(e topics.Envelope, v any) error {
	if e.Version != topics.MatcherEventVersion {
		return fmt.Errorf("decode %s: unknown version %d", e.Type, e.Version)
	}
	return e.UnmarshalData(v)
}

func decodeStatus(e topics.Envelope) (*topics.MarketStatus, error) {
	st := &topics.MarketStatus{}
	if err := decodeMatcher(e, st); err != nil {
		return nil, err
	}
	if _, slot, err := topics.ParseInstrumentID(st.InstrumentID); err != nil || slot != st.Slot {
		return nil, fmt.Errorf("market status of %+q for slot %d", st.InstrumentID, st.Slot)
	}
	if st.Status < topics.MarketStatusNotStarted || st.Status > topics.MarketStatusFinalized {
		return nil, fmt.Errorf("market %s: unknown status %d", st.InstrumentID, st.Status)
	}
	return st, nil
}

func decodeEvent(e topics.Envelope) (*Event, error) {
	ev := &Event{}
	if err := decodeMatcher(e, &ev.OrderEvent); err != nil {
		return nil, err
	}
	var err error
	if ev.quantity, err = amount("quantity", ev.Quantity, true); err != nil {
		return nil, err
	}
	if ev.fulfilled, err = amount("fulfilled", ev.Fulfilled, false); err != nil {
		return nil, err
	}
	if ev.Price != "" {
		p, err := amount("price", ev.Price, true)
		if err != nil {
			return nil, err
		}
		ev.price = &p
	}
	switch {
	case ev.OrderID <= 0:
		return nil, fmt.Errorf("order event of order %d: orderId must be positive", ev.OrderID)
	case ev.fulfilled.GreaterThan(ev.quantity):
		return nil, fmt.Errorf("order %d: fulfilled %s exceeds quantity %s", ev.OrderID, ev.fulfilled, ev.quantity)
	case !knownStatus(ev.Status):
		return nil, fmt.Errorf("order %d: unknown status %d", ev.OrderID, ev.Status)
	case ev.OrderType < 0 || ev.OrderType > math.MaxInt16:
		return nil, fmt.Errorf("order %d: orderType %d out of range", ev.OrderID, ev.OrderType)
	}
	return ev, nil
}

func decodeFill(e topics.Envelope) (*Fill, error) {
	f := &Fill{}
	if err := decodeMatcher(e, &f.Fill); err != nil {
		return nil, err
	}
	if f.TradeID <= 0 {
		return nil, fmt.Errorf("fill with tradeId %d", f.TradeID)
	}
	fam, slot, err := topics.ParseInstrumentID(f.InstrumentID)
	if err != nil {
		return nil, err
	}
	if slot != f.Slot {
		return nil, fmt.Errorf("fill %d: instrument %s is not of slot %d", f.TradeID, f.InstrumentID, f.Slot)
	}
	f.family = fam
	if f.price, err = amount("price", f.Price, true); err != nil {
		return nil, err
	}
	if f.quantity, err = amount("quantity", f.Quantity, true); err != nil {
		return nil, err
	}
	if f.buyerFee, err = amount("buyerFee", f.BuyerFee, false); err != nil {
		return nil, err
	}
	if f.sellerFee, err = amount("sellerFee", f.SellerFee, false); err != nil {
		return nil, err
	}
	if f.PreconfQuantity != "" {
		if f.preconf, err = amount("preconfQuantity", f.PreconfQuantity, false); err != nil {
			return nil, err
		}
	}
	f.value = f.price.Mul(f.quantity)
	taker := side{f.TakerOrderID, f.TakerUserID, f.TakerAccountID}
	maker := side{f.MakerOrderID, f.MakerUserID, f.MakerAccountID}
	f.buyer, f.seller = taker, maker
	if !f.Side {
		f.buyer, f.seller = maker, taker
	}
	switch {
	case f.sellerFee.GreaterThan(f.value):
		return nil, fmt.Errorf("fill %d: seller fee %s exceeds the value %s", f.TradeID, f.sellerFee, f.value)
	case fam == topics.WholeBlock && !f.quantity.Equal(decimal.NewFromInt(1)):
		return nil, fmt.Errorf("fill %d: a whole block trades quantity 1, not %s", f.TradeID, f.quantity)
	case fam == topics.InclusionPreconf && !f.preconf.IsZero():
		return nil, fmt.Errorf("fill %d: an inclusion-preconf trade moves no preconf gas with it", f.TradeID)
	case !f.quantity.IsInteger() || !f.preconf.IsInteger():
		return nil, fmt.Errorf("fill %d: quantities must be whole units", f.TradeID)
	case taker.order <= 0 || maker.order <= 0 || taker.order == maker.order:
		return nil, fmt.Errorf("fill %d: order ids %d and %d", f.TradeID, taker.order, maker.order)
	case taker.account <= 0 || maker.account <= 0 || taker.user <= 0 || maker.user <= 0:
		return nil, fmt.Errorf("fill %d: users and accounts must be positive", f.TradeID)
	}
	return f, nil
}

// Bounds of the amounts a payload may carry: far beyond any price, fee or
// gas quantity, and small enough that no product of two of them is costly
// to compute or store.
const (
	maxScale         = 60
	maxIntegerDigits = 40
)

// amount parses a decimal field: at least zero, above zero when positive
// is set.
func amount(name, s string, positive bool) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	switch {
	case err != nil:
		return decimal.Decimal{}, fmt.Errorf("%s %+q is not a decimal", name, s)
	case d.Exponent() < -maxScale || int(d.Exponent())+d.NumDigits() > maxIntegerDigits:
		return decimal.Decimal{}, fmt.Errorf("%s %s is out of range", name, s)
	case d.IsNegative(), positive && d.IsZero():
		return decimal.Decimal{}, fmt.Errorf("%s %s is out of range", name, s)
	}
	return d, nil
}
