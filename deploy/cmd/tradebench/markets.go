package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"blockspace.exchange/topics"
)

// listedMarket is a market as GET /api/v1/p/<family>/markets lists it.
type listedMarket struct {
	Slot         uint64 `json:"slot"`
	Status       int    `json:"status"`
	MaturityTime int64  `json:"maturityTime"`
}

// market is one market a pair trades in: the lot it passes back and
// forth and the price of every order.
type market struct {
	family     topics.Family
	slot       uint64
	instrument string
	lot, price string
}

// The lot and price of each family: the smallest inclusion-preconf
// quantity (21,000 gas at 2 gwei), one whole block at 0.01 ETH.
var lots = map[topics.Family]struct{ lot, price string }{
	topics.InclusionPreconf: {"21000", "0.000000002"},
	topics.WholeBlock:       {"1", "0.01"},
}

// pickMarkets chooses n markets that are open and stay open until after
// until: inclusion preconf first (its quantities are gas units, the
// family a pair's lot is smallest in), then whole block, each by slot.
func pickMarkets(pc, wb []listedMarket, until time.Time, n int) ([]market, error) {
	var out []market
	for _, f := range []struct {
		family topics.Family
		listed []listedMarket
	}{{topics.InclusionPreconf, pc}, {topics.WholeBlock, wb}} {
		listed := slices.Clone(f.listed)
		slices.SortFunc(listed, func(a, b listedMarket) int { return cmp.Compare(a.Slot, b.Slot) })
		for _, m := range listed {
			if len(out) == n {
				return out, nil
			}
			if m.Status != topics.MarketStatusOpen || !time.UnixMilli(m.MaturityTime).After(until) {
				continue
			}
			l := lots[f.family]
			out = append(out, market{family: f.family, slot: m.Slot, instrument: topics.InstrumentID(f.family, m.Slot), lot: l.lot, price: l.price})
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("%d markets stay open until %s, %d pairs asked for", len(out), until.Format(time.TimeOnly), n)
	}
	return out, nil
}
