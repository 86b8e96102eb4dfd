package markets

import (
	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// WholeBlockMarket is the WholeBlockMarket resource of the interface
// (docs/api.md "Markets (public)").
// Price and direction are null before the first trade, midPrice while the
// book lacks a side.
type WholeBlockMarket struct {
	MarketID         int64   `json:"marketId"`
	Slot             uint64  `json:"slot"`
	InstrumentID     string  `json:"instrumentId"`
	Name             string  `json:"name"`
	PriceStep        string  `json:"priceStep"`
	MinPrice         string  `json:"minPrice"`
	MaxPrice         string  `json:"maxPrice"`
	AvailablePreconf int64   `json:"availablePreconf"`
	Direction        *bool   `json:"direction"`
	Price            *string `json:"price"`
	MidPrice         *string `json:"midPrice"`
	Status           int     `json:"status"`
	MaturityTime     int64   `json:"maturityTime"`
	TrxSubmitTime    int64   `json:"trxSubmitTime"`
	BlockTime        int64   `json:"blockTime"`
	FinalityTime     int64   `json:"finalityTime"`
	UpdateDate       int64   `json:"updateDate"`
}

// InclusionPreconfMarket is the InclusionPreconfMarket resource of the
// interface (docs/api.md "Markets (public)"). bestBid is null while no buy
// order rests.
type InclusionPreconfMarket struct {
	MarketID          int64   `json:"marketId"`
	Slot              uint64  `json:"slot"`
	InstrumentID      string  `json:"instrumentId"`
	Name              string  `json:"name"`
	QuantityStep      string  `json:"quantityStep"`
	MinQuantity       string  `json:"minQuantity"`
	MaxQuantity       string  `json:"maxQuantity"`
	PriceStep         string  `json:"priceStep"`
	MinPrice          string  `json:"minPrice"`
	MaxPrice          string  `json:"maxPrice"`
	BestBid           *string `json:"bestBid"`
	CollateralPerSlot string  `json:"collateralPerSlot"`
	TotalPreconf      int64   `json:"totalPreconf"`
	AvailablePreconf  int64   `json:"availablePreconf"`
	Direction         *bool   `json:"direction"`
	Price             *string `json:"price"`
	MidPrice          *string `json:"midPrice"`
	Status            int     `json:"status"`
	MaturityTime      int64   `json:"maturityTime"`
	TrxSubmitTime     int64   `json:"trxSubmitTime"`
	BlockTime         int64   `json:"blockTime"`
	FinalityTime      int64   `json:"finalityTime"`
	TotalGas          int64   `json:"totalGas"`
	ValidatorType     int     `json:"validatorType"`
	UpdateDate        int64   `json:"updateDate"`
}

// visible reports whether a market is known to the matcher and open or
// past open: its parameters were read and the matcher reported a status.
func (mk *market) visible() bool {
	return mk != nil && mk.open != nil && mk.status >= topics.MarketStatusOpen
}

// live markets are listed: open, trading closed or submission closed.
func (mk *market) live() bool {
	return mk.visible() && mk.status < topics.MarketStatusFinalized
}

func (mk *market) prices() (last *string, mid *string, bestBid *string) {
	if mk.lastPrice != "" {
		p := mk.lastPrice
		last = &p
	}
	bid, ask, hasBid, hasAsk := mk.bestBidAsk()
	if hasBid {
		b := bid.String()
		bestBid = &b
	}
	if hasBid && hasAsk {
		m := bid.Add(ask).Div(decimal.NewFromInt(2)).String()
		mid = &m
	}
	return
}

func (mk *market) wholeBlock() WholeBlockMarket {
	o := mk.open
	last, mid, _ := mk.prices()
	id := topics.InstrumentID(topics.WholeBlock, o.Slot)
	return WholeBlockMarket{
		MarketID: topics.MarketID(topics.WholeBlock, o.Slot), Slot: o.Slot, InstrumentID: id, Name: id,
		PriceStep: o.PriceStep, MinPrice: o.MinPrice, MaxPrice: o.MaxPrice,
		AvailablePreconf: mk.available, Direction: mk.lastSide, Price: last, MidPrice: mid,
		Status: mk.status, MaturityTime: o.MaturityTime, TrxSubmitTime: o.TrxSubmitTime,
		BlockTime: o.BlockTime, FinalityTime: o.FinalityTime, UpdateDate: mk.updated,
	}
}

func (mk *market) preconf() InclusionPreconfMarket {
	o := mk.open
	last, mid, bid := mk.prices()
	id := topics.InstrumentID(topics.InclusionPreconf, o.Slot)
	collateral := o.CollateralPerSlot
	if collateral == "" {
		collateral = "0"
	}
	return InclusionPreconfMarket{
		MarketID: topics.MarketID(topics.InclusionPreconf, o.Slot), Slot: o.Slot, InstrumentID: id, Name: id,
		QuantityStep: o.QuantityStep, MinQuantity: o.MinQuantity, MaxQuantity: o.MaxQuantity,
		PriceStep: o.PriceStep, MinPrice: o.MinPrice, MaxPrice: o.MaxPrice, BestBid: bid,
		CollateralPerSlot: collateral, TotalPreconf: mk.total, AvailablePreconf: mk.available,
		Direction: mk.lastSide, Price: last, MidPrice: mid, Status: mk.status,
		MaturityTime: o.MaturityTime, TrxSubmitTime: o.TrxSubmitTime, BlockTime: o.BlockTime, FinalityTime: o.FinalityTime,
		TotalGas: o.TotalGas, ValidatorType: o.ValidatorType, UpdateDate: mk.updated,
	}
}

// WholeBlockMarkets lists the live whole-block markets by slot.
func (m *Model) WholeBlockMarkets() []WholeBlockMarket {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []WholeBlockMarket{}
	for _, s := range m.sortedSlots() {
		if mk := m.slots[s].markets[0]; mk.live() {
			out = append(out, mk.wholeBlock())
		}
	}
	return out
}

// PreconfMarkets lists the live inclusion-preconf markets by slot.
func (m *Model) PreconfMarkets() []InclusionPreconfMarket {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []InclusionPreconfMarket{}
	for _, s := range m.sortedSlots() {
		if mk := m.slots[s].markets[1]; mk.live() {
			out = append(out, mk.preconf())
		}
	}
	return out
}

// PreconfMarket returns the inclusion-preconf market of slot, finalized
// ones included while the model keeps them.
func (m *Model) PreconfMarket(slot uint64) (InclusionPreconfMarket, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.slots[slot]
	if s == nil || !s.markets[1].visible() {
		return InclusionPreconfMarket{}, false
	}
	return s.markets[1].preconf(), true
}
