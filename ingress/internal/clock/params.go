package clock

import (
	"fmt"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Params are the market parameters the clock puts into every market.open.
// Prices are ETH (whole block) and ETH per gas unit (inclusion preconf);
// quantities are gas units.
type Params struct {
	WholeBlock PriceRange
	Preconf    PriceRange
	// QuantityStep, MinQuantity and MaxQuantity bound inclusion-preconf
	// orders, in gas units.
	QuantityStep, MinQuantity, MaxQuantity int64
	// TotalGas is the block's gas limit; TotalPreconf the part of it sold
	// as inclusion preconfirmations.
	TotalGas, TotalPreconf int64
}

// PriceRange is one family's price grid.
type PriceRange struct {
	Step, Min, Max string
}

// DefaultParams are the values of docs/markets.md: a 36,000,000 gas block
// of which 18,000,000 are sold as inclusion preconfirmations in steps of
// 1,000 gas from 21,000 (one transfer); whole blocks priced from 0.0001 to
// 100 ETH in steps of 0.0001; preconf gas from 1 to 1,000 gwei in 1 gwei
// steps.
func DefaultParams() Params {
	return Params{
		WholeBlock:   PriceRange{Step: "0.0001", Min: "0.0001", Max: "100"},
		Preconf:      PriceRange{Step: "0.000000001", Min: "0.000000001", Max: "0.000001"},
		QuantityStep: 1_000, MinQuantity: 21_000, MaxQuantity: 18_000_000,
		TotalGas: 36_000_000, TotalPreconf: 18_000_000,
	}
}

// Validate checks the parameters the matcher would refuse, so that a bad
// configuration fails at start instead of leaving every market closed.
func (p Params) Validate() error {
	for name, r := range map[string]PriceRange{"whole-block": p.WholeBlock, "inclusion-preconf": p.Preconf} {
		step, err1 := decimal.NewFromString(r.Step)
		lo, err2 := decimal.NewFromString(r.Min)
		hi, err3 := decimal.NewFromString(r.Max)
		if err1 != nil || err2 != nil || err3 != nil || !step.IsPositive() || !lo.IsPositive() || hi.LessThan(lo) ||
			!lo.Mod(step).IsZero() || !hi.Mod(step).IsZero() {
			return fmt.Errorf("market params: %s prices step %q, min %q, max %q: want positive decimals, min ≤ max, both multiples of step", name, r.Step, r.Min, r.Max)
		}
	}
	switch {
	case p.QuantityStep <= 0 || p.MinQuantity <= 0 || p.MaxQuantity < p.MinQuantity:
		return fmt.Errorf("market params: preconf quantity step %d, min %d, max %d: want positive, min ≤ max", p.QuantityStep, p.MinQuantity, p.MaxQuantity)
	case p.TotalPreconf < 0 || p.TotalPreconf > p.TotalGas:
		return fmt.Errorf("market params: totalPreconf %d must be from 0 to totalGas %d", p.TotalPreconf, p.TotalGas)
	}
	return nil
}

func (p Params) marketOpen(slot uint64, f topics.Family) topics.MarketOpen {
	m := topics.MarketOpen{Slot: slot, Family: f, TotalGas: p.TotalGas, TotalPreconf: p.TotalPreconf}
	r := p.WholeBlock
	if f == topics.InclusionPreconf {
		r = p.Preconf
		m.QuantityStep = fmt.Sprint(p.QuantityStep)
		m.MinQuantity = fmt.Sprint(p.MinQuantity)
		m.MaxQuantity = fmt.Sprint(p.MaxQuantity)
	}
	m.PriceStep, m.MinPrice, m.MaxPrice = r.Step, r.Min, r.Max
	return m
}
