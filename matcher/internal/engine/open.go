package engine

import (
	"fmt"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// applyMarketOpen opens one market of a slot. The first market.open of a
// slot also issues the slot: the seller account receives the whole block
// and the slot's preconf gas, whichever family opens first.
func (e *Engine) applyMarketOpen(in topics.Envelope) error {
	cmd, err := topics.DecodeMarketOpen(in)
	if err != nil {
		return err
	}
	p, fees, err := newParams(cmd)
	if err != nil {
		return fmt.Errorf("market %s: %w", topics.InstrumentID(cmd.Family, cmd.Slot), err)
	}
	s := e.slotFor(cmd.Slot, true)
	if !s.firstSeen(in.ID) || s.markets[familyOf(cmd.Family)] != nil || s.phase == topics.MarketStatusFinalized {
		return nil
	}
	if !s.issued {
		s.issue(cmd, fees)
	}
	m := &market{
		family:     cmd.Family,
		id:         topics.MarketID(cmd.Family, cmd.Slot),
		instrument: topics.InstrumentID(cmd.Family, cmd.Slot),
		status:     topics.MarketStatusOpen,
		params:     p,
		fees:       fees,
		open:       cmd,
		book:       book.New(),
		clientIDs:  make(map[clientKey]int64),
	}
	if s.phase > 0 {
		// The clock already closed trading: the market never opens.
		m.status = s.phase
	}
	s.markets[familyOf(cmd.Family)] = m
	em := e.emitterFor(s, inputOf(in))
	em.marketStatus(m)
	return em.errs
}

// issue credits the seller with what the slot has to sell.
func (s *slot) issue(cmd topics.MarketOpen, fees feeRates) {
	s.issued = true
	s.sellerUser, s.sellerAccount = cmd.SellerUserID, cmd.SellerAccountID
	s.totalPreconf = cmd.TotalPreconf
	s.fees = fees
	s.holder = cmd.SellerAccountID
	s.position(cmd.SellerAccountID, wholeBlock).qty = 1
	s.position(cmd.SellerAccountID, inclusionPreconf).qty = cmd.TotalPreconf
}

// applyTick moves the slot's markets to the tick's status. trading_closed
// expires every open order first. market_open ticks change nothing: a
// market opens with its parameters, which only market.open carries.
func (e *Engine) applyTick(in topics.Envelope) error {
	tick, err := topics.DecodeClockTick(in)
	if err != nil {
		return err
	}
	status := tickStatus(tick.Kind)
	s := e.slots[tick.Slot]
	if s == nil || status == 0 || status <= s.phase || !s.firstSeen(in.ID) {
		return nil
	}
	s.phase = status
	em := e.emitterFor(s, inputOf(in))
	// Expire in both markets before reporting either status, so both
	// report the same availablePreconf.
	for _, m := range s.markets {
		if m != nil && m.status == topics.MarketStatusOpen {
			em.expireAll(m)
		}
	}
	for _, m := range s.markets {
		if m != nil {
			m.status = status
			em.marketStatus(m)
		}
	}
	if status == topics.MarketStatusFinalized {
		s.finalize()
		e.finalized = append(e.finalized, s.n)
		e.evictBefore(s.n)
	}
	return em.errs
}

func tickStatus(k topics.TickKind) int {
	switch k {
	case topics.TickTradingClosed:
		return topics.MarketStatusTradingClosed
	case topics.TickSubmissionClosed:
		return topics.MarketStatusSubmissionClosed
	case topics.TickFinalized:
		return topics.MarketStatusFinalized
	}
	return 0
}

// finalize frees everything but the command ids, which keep dropping late
// duplicates until the slot is evicted.
func (s *slot) finalize() {
	for i, m := range s.markets {
		if m != nil {
			s.markets[i] = &market{family: m.family, id: m.id, instrument: m.instrument, status: m.status}
		}
	}
	s.orders, s.done = nil, nil
	s.positions = nil
}

// reportAvailable reports the slot's availablePreconf with a market.status
// of each of its markets (their status unchanged) when the input changed
// it and no fill of the input already carried the new value: a resting
// sell of the block's holder in the inclusion-preconf market locks gas,
// and its cancel, system cancel or self-trade cancel frees it, without a
// fill. before is the value when the input arrived.
func (em *emitter) reportAvailable(before int64) {
	s := em.s
	if s.transient || s.positions == nil {
		return
	}
	last := before
	if em.reportedSet {
		last = em.reported
	}
	if s.availablePreconf() == last {
		return
	}
	for _, m := range s.markets {
		if m != nil {
			em.marketStatus(m)
		}
	}
}

// expireAll expires every resting order of m, in order id order.
func (em *emitter) expireAll(m *market) {
	for _, o := range em.s.liveOrders(m, 0) {
		em.s.remove(o)
		o.status = topics.OrderStatusExpired
		em.orderEvent(topics.TypeOrderExpired, o, orderEventOpts{reason: topics.ReasonMarketClosed})
	}
}

func (em *emitter) marketStatus(m *market) {
	em.reported, em.reportedSet = em.s.availablePreconf(), true
	em.event(topics.TypeMarketStatus, &topics.MarketStatus{
		CommandID:        em.in.id,
		MarketID:         m.id,
		InstrumentID:     m.instrument,
		Slot:             em.s.n,
		Status:           m.status,
		AvailablePreconf: em.s.availablePreconf(),
		TotalPreconf:     em.s.totalPreconf,
	})
}
