package engine

import (
	"strconv"

	"github.com/shopspring/decimal"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// TradesPerSlot bounds the trades of one slot: trade ids are
// slot × TradesPerSlot + n, unique across slots without coordination.
const TradesPerSlot = 10_000_000

// bookEvent applies one effect of taker on a resting order.
func (em *emitter) bookEvent(taker *order, ev book.Event) {
	maker := em.s.orders[ev.Maker.ID]
	if ev.Kind == book.SelfTradeCancelled {
		em.s.release(maker)
		em.systemCancel(maker, topics.ReasonSelfTrade)
		return
	}
	em.trade(taker, maker, ev.Price, ev.Qty)
}

// trade records one match: positions move from seller to buyer (with the
// block's preconf gas for a whole-block trade), then the fill and both
// orders' new state are reported.
func (em *emitter) trade(taker, maker *order, priceTicks, qty int64) {
	s, m := em.s, taker.market
	buyer, seller := taker, maker
	if taker.side == book.Sell {
		buyer, seller = maker, taker
	}
	primary := seller.cmd.AccountID == s.sellerAccount
	preconf := s.movePositions(m, buyer.cmd.AccountID, seller.cmd.AccountID, qty)

	s.nextTrade++
	price := m.priceString(priceTicks)
	buyerFee, sellerFee := m.fees.of(m.params, priceTicks, qty, primary)
	f := &em.e.scratch.fill
	*f = topics.Fill{
		TradeID:          int64(s.n)*TradesPerSlot + s.nextTrade,
		CommandID:        em.in.id,
		MarketID:         m.id,
		InstrumentID:     m.instrument,
		Slot:             s.n,
		Price:            price,
		Quantity:         strconv.FormatInt(qty, 10),
		Side:             taker.side == book.Buy,
		TakerOrderID:     taker.cmd.OrderID,
		TakerUserID:      taker.cmd.UserID,
		TakerAccountID:   taker.cmd.AccountID,
		MakerOrderID:     maker.cmd.OrderID,
		MakerUserID:      maker.cmd.UserID,
		MakerAccountID:   maker.cmd.AccountID,
		PrimarySale:      primary,
		AvailablePreconf: s.availablePreconf(),
		BuyerFee:         buyerFee,
		SellerFee:        sellerFee,
	}
	if m.family == topics.WholeBlock {
		f.PreconfQuantity = strconv.FormatInt(preconf, 10)
	}
	em.fill(f)
	tradeID, preconfQty := f.TradeID, f.PreconfQuantity
	for _, o := range [2]*order{maker, taker} {
		o.filled += qty
		o.status = fillStatus(o)
		fee := sellerFee
		if o == buyer {
			fee = buyerFee
		}
		em.orderEvent(topics.TypeOrderFilled, o, orderEventOpts{tradeID: tradeID, lastPrice: price, lastQty: qty,
			lastFee: fee, lastPreconf: preconfQty})
	}
	if maker.filled == maker.qty {
		s.release(maker)
	}
}

// movePositions moves qty of market m from seller to buyer and returns the
// preconf gas that moved with a whole block.
//
// The seller's locked quantity shrinks with its position, because the
// traded units were locked by its sell order. A whole block carries the
// seller's unlocked inclusion-preconf position: gas the seller already
// sold, or offers in a resting sell order, stays out of the block.
func (s *slot) movePositions(m *market, buyer, seller int64, qty int64) int64 {
	f := familyOf(m.family)
	sp := s.position(seller, f)
	sp.qty -= qty
	sp.locked -= qty
	s.position(buyer, f).qty += qty
	if m.family != topics.WholeBlock {
		return 0
	}
	s.holder = buyer
	from := s.position(seller, inclusionPreconf)
	gas := from.free()
	from.qty -= gas
	s.position(buyer, inclusionPreconf).qty += gas
	return gas
}

// of returns the buyer's and the seller's fee of a trade of qty at
// priceTicks: value × rate, value = price × qty, exact.
func (f feeRates) of(p params, priceTicks, qty int64, primary bool) (buyer, seller string) {
	if f.fixedOK && p.stepOK && priceTicks >= 0 && qty >= 0 {
		sell := f.fixedSecondary
		if primary {
			sell = f.fixedPrimary
		}
		value, ok1 := p.step.mul(fixed{coef: uint64(priceTicks)})
		value, ok2 := value.mul(fixed{coef: uint64(qty)})
		b, ok3 := value.mul(f.fixedBuy)
		s, ok4 := value.mul(sell)
		if ok1 && ok2 && ok3 && ok4 {
			return b.String(), s.String()
		}
	}
	value := p.Price(priceTicks).Mul(decimal.NewFromInt(qty))
	sellRate := f.SecondarySell
	if primary {
		sellRate = f.PrimarySell
	}
	return value.Mul(f.Buy).String(), value.Mul(sellRate).String()
}
