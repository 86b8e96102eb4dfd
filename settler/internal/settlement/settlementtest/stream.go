// Package settlementtest builds what the settlement of trading reads, for
// tests and benchmarks: funded users, order rows written as ingress writes
// them, and the matcher's records (market.open, order events, fills) of
// trades a test spells out. The records follow docs/matcher.md: ids
// "oe:<slot>:<n>" and "fill:<tradeId>", fees value × rate, events carrying
// the order's whole state.
package settlementtest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Account is a user's preconf trading account.
type Account struct{ User, Account int64 }

// Fees are a slot's fee rates.
type Fees struct{ Buy, PrimarySell, SecondarySell decimal.Decimal }

// DefaultFees are the regular user class's rates of migration 0001.
var DefaultFees = Fees{decimal.RequireFromString("0.001"), decimal.RequireFromString("0.02"), decimal.RequireFromString("0.005")}

// Order is an order as ingress placed it and the matcher moved it.
type Order struct {
	ID         int64
	Acc        Account
	Instrument string
	Slot       uint64
	Family     topics.Family
	Buy        bool
	Type       int
	// Price is the limit, or a market order's worst price (which the
	// reservation uses).
	Price    decimal.Decimal
	Quantity decimal.Decimal
	ClientID string
	// Reserved is what ingress locked for a buy: price × quantity × (1 +
	// buyFeeRate), rounded up to 18 decimals.
	Reserved decimal.Decimal

	Filled decimal.Decimal
	Status int
}

type slotState struct {
	seller Account
	fees   Fees
	events int
	trades int64
}

// Record is one record of the matcher's topics, with the topic it is on.
type Record struct {
	Topic    string
	Envelope topics.Envelope
}

// Stream accumulates the records of a scenario in log order per topic.
type Stream struct {
	Records []Record
	at      time.Time
	slots   map[uint64]*slotState
	next    int64
}

// NewStream starts a scenario whose first record is at start; each record
// is one millisecond after the previous one.
func NewStream(start time.Time) *Stream {
	return &Stream{at: start, slots: map[uint64]*slotState{}, next: 1000}
}

// Topic returns the records of one topic, in log order.
func (s *Stream) Topic(topic string) []Record {
	var out []Record
	for _, r := range s.Records {
		if r.Topic == topic {
			out = append(out, r)
		}
	}
	return out
}

func (s *Stream) add(topic, typ, id string, version int, payload any) {
	s.at = s.at.Add(time.Millisecond)
	e, err := topics.NewEnvelope(typ, version, id, s.at, payload)
	if err != nil {
		panic(err) // the builder's payloads always encode
	}
	s.Records = append(s.Records, Record{Topic: topic, Envelope: e})
}

// Open opens both markets of slot for seller: the two market.open commands
// on orders and the matcher's market.status of each on order-events.
func (s *Stream) Open(slot uint64, seller Account, totalPreconf int64, fees Fees) {
	s.slots[slot] = &slotState{seller: seller, fees: fees}
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		m := topics.MarketOpen{Slot: slot, Family: f, PriceStep: "0.000000001", MinPrice: "0.000000001", MaxPrice: "100",
			SellerUserID: seller.User, SellerAccountID: seller.Account, TotalGas: 2 * totalPreconf, TotalPreconf: totalPreconf,
			BuyFeeRate: fees.Buy.String(), PrimarySellFeeRate: fees.PrimarySell.String(), SecondarySellFeeRate: fees.SecondarySell.String()}
		if f == topics.InclusionPreconf {
			m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1", "1", strconv.FormatInt(totalPreconf, 10)
		}
		s.add(topics.Orders, topics.TypeMarketOpen, m.ID(), topics.MarketOpenVersion, m)
	}
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		s.status(slot, f, topics.MarketStatusOpen, totalPreconf)
	}
}

func (s *Stream) status(slot uint64, f topics.Family, status int, available int64) {
	st := topics.MarketStatus{CommandID: "tick", MarketID: topics.MarketID(f, slot), InstrumentID: topics.InstrumentID(f, slot),
		Slot: slot, Status: status, AvailablePreconf: available}
	s.add(topics.OrderEvents, topics.TypeMarketStatus, s.eventID(slot), topics.MatcherEventVersion, st)
}

func (s *Stream) eventID(slot uint64) string {
	st := s.slots[slot]
	st.events++
	return "oe:" + strconv.FormatUint(slot, 10) + ":" + strconv.Itoa(st.events)
}

// Place returns a new order (no record: ingress writes its row, see
// InsertOrder, and the matcher answers with Accept or Reject). price may
// be "" for a market order, which then reserves at maxPrice (100).
func (s *Stream) Place(acc Account, f topics.Family, slot uint64, buy bool, orderType int, price, qty string) *Order {
	s.next++
	o := &Order{ID: s.next, Acc: acc, Instrument: topics.InstrumentID(f, slot), Slot: slot, Family: f, Buy: buy, Type: orderType,
		Quantity: decimal.RequireFromString(qty), Price: decimal.NewFromInt(100)}
	if price != "" {
		o.Price = decimal.RequireFromString(price)
	}
	if buy {
		o.Reserved = Reservation(o.Price, o.Quantity, s.slots[slot].fees.Buy)
	}
	return o
}

// Reservation is price × quantity × (1 + buyFeeRate) rounded up to 18
// decimals, what ingress locks for a buy.
func Reservation(price, qty, buyFeeRate decimal.Decimal) decimal.Decimal {
	r := price.Mul(qty).Mul(decimal.NewFromInt(1).Add(buyFeeRate))
	if t := r.Truncate(18); !t.Equal(r) {
		return t.Add(decimal.New(1, -18))
	}
	return r
}

// event adds an order event with the order's state.
func (s *Stream) event(typ string, o *Order, code *int, reason string, trade int64, lastPrice string, lastQty decimal.Decimal) {
	ev := topics.OrderEvent{CommandID: "cmd-" + strconv.FormatInt(o.ID, 10), OrderID: o.ID, ClientOrderID: o.ClientID,
		UserID: o.Acc.User, AccountID: o.Acc.Account, MarketID: topics.MarketID(o.Family, o.Slot), InstrumentID: o.Instrument,
		Slot: o.Slot, Side: o.Buy, OrderType: o.Type, Price: o.Price.String(), Quantity: o.Quantity.String(),
		Fulfilled: o.Filled.String(), Status: o.Status, ErrorCode: code, Reason: reason, TradeID: trade}
	if trade != 0 {
		ev.LastPrice, ev.LastQuantity = lastPrice, lastQty.String()
	}
	s.add(topics.OrderEvents, typ, s.eventID(o.Slot), topics.MatcherEventVersion, ev)
}

// Accept reports the order accepted: resting on the book (status 1), or
// about to trade (status 0).
func (s *Stream) Accept(o *Order, resting bool) {
	o.Status = topics.OrderStatusPending
	if resting {
		o.Status = topics.OrderStatusOnBook
	}
	s.event(topics.TypeOrderAccepted, o, nil, "", 0, "", decimal.Zero)
}

// Reject reports the order rejected with code.
func (s *Stream) Reject(o *Order, code int) {
	o.Status = topics.OrderStatusError
	s.event(topics.TypeOrderRejected, o, &code, "", 0, "", decimal.Zero)
}

// Cancel reports the order cancelled by its user (status 11) or by the
// system (status 12, code 191).
func (s *Stream) Cancel(o *Order, bySystem bool) {
	if bySystem {
		code := topics.CodeAutoCancelled
		o.Status = topics.OrderStatusCancelledBySys
		s.event(topics.TypeOrderCancelled, o, &code, topics.ReasonUnfilledRemainder, 0, "", decimal.Zero)
		return
	}
	code := topics.CodeManuallyCancelled
	o.Status = topics.OrderStatusCancelledByUser
	s.event(topics.TypeOrderCancelled, o, &code, topics.ReasonUser, 0, "", decimal.Zero)
}

// Trade matches taker with maker at price for qty: the fill, then the
// maker's and the taker's order.filled. preconf is the gas that moves with
// a whole block (the seller's free inclusion-preconf position).
func (s *Stream) Trade(taker, maker *Order, price string, qty, preconf int64) topics.Fill {
	st := s.slots[taker.Slot]
	st.trades++
	seller := maker
	if !taker.Buy {
		seller = taker
	}
	p, q := decimal.RequireFromString(price), decimal.NewFromInt(qty)
	value := p.Mul(q)
	primary := seller.Acc == st.seller
	sellRate := st.fees.SecondarySell
	if primary {
		sellRate = st.fees.PrimarySell
	}
	f := topics.Fill{TradeID: int64(taker.Slot)*10_000_000 + st.trades, CommandID: "cmd-" + strconv.FormatInt(taker.ID, 10),
		MarketID: topics.MarketID(taker.Family, taker.Slot), InstrumentID: taker.Instrument, Slot: taker.Slot,
		Price: p.String(), Quantity: q.String(), Side: taker.Buy,
		TakerOrderID: taker.ID, TakerUserID: taker.Acc.User, TakerAccountID: taker.Acc.Account,
		MakerOrderID: maker.ID, MakerUserID: maker.Acc.User, MakerAccountID: maker.Acc.Account,
		PrimarySale: primary, BuyerFee: value.Mul(st.fees.Buy).String(), SellerFee: value.Mul(sellRate).String()}
	if taker.Family == topics.WholeBlock {
		f.PreconfQuantity = strconv.FormatInt(preconf, 10)
	}
	s.add(topics.Fills, topics.TypeTradeExecuted, "fill:"+strconv.FormatInt(f.TradeID, 10), topics.MatcherEventVersion, f)
	for _, o := range []*Order{maker, taker} {
		o.Filled = o.Filled.Add(q)
		o.Status = topics.OrderStatusPartiallyFilled
		if o.Filled.Equal(o.Quantity) {
			o.Status = topics.OrderStatusDone
		}
		s.event(topics.TypeOrderFilled, o, nil, "", f.TradeID, f.Price, q)
	}
	return f
}

// Close closes trading of slot: every live order of live expires (status
// 14), then both markets report status 2.
func (s *Stream) Close(slot uint64, live ...*Order) {
	for _, o := range live {
		if o.Status == topics.OrderStatusOnBook || o.Status == topics.OrderStatusPartiallyFilled {
			o.Status = topics.OrderStatusExpired
			s.event(topics.TypeOrderExpired, o, nil, topics.ReasonMarketClosed, 0, "", decimal.Zero)
		}
	}
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		s.status(slot, f, topics.MarketStatusTradingClosed, 0)
	}
}

// String names an order in test failures.
func (o *Order) String() string {
	side := "sell"
	if o.Buy {
		side = "buy"
	}
	return fmt.Sprintf("order %d (%s %s %s@%s)", o.ID, side, o.Quantity, o.Instrument, o.Price)
}
