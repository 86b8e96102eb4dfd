package engine

import (
	mkt "blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// params are a market's parameters (platform/market, derived once from
// its market.open: prices in ticks of priceStep, quantities in units) and
// the price step as fixed, so that the hot path prices in integers.
type params struct {
	mkt.Params
	step   fixed // PriceStep, when stepOK
	stepOK bool
}

// feeRates are the slot's fee rates as fractions of trade value.
type feeRates struct {
	mkt.Fees
	// The same as fixed, when ok: trades then compute fees in integers.
	fixedBuy, fixedPrimary, fixedSecondary fixed
	fixedOK                                bool
}

// newParams checks a market.open as every reader does and adds the
// matcher's fixed-point forms.
func newParams(m topics.MarketOpen) (params, feeRates, error) {
	mp, err := mkt.New(m)
	if err != nil {
		return params{}, feeRates{}, err
	}
	p := params{Params: mp}
	p.step, p.stepOK = parseFixed(m.PriceStep)
	return p, withFixed(mp.Fees), nil
}

// parseFees reads fee rates restored from a snapshot.
func parseFees(buy, primarySell, secondarySell string) (feeRates, error) {
	f, err := mkt.ParseFees(buy, primarySell, secondarySell)
	if err != nil {
		return feeRates{}, err
	}
	return withFixed(f), nil
}

func withFixed(mf mkt.Fees) feeRates {
	f := feeRates{Fees: mf}
	var ok [3]bool
	f.fixedBuy, ok[0] = fixedRate(mf.Raw[0])
	f.fixedPrimary, ok[1] = fixedRate(mf.Raw[1])
	f.fixedSecondary, ok[2] = fixedRate(mf.Raw[2])
	f.fixedOK = ok == [3]bool{true, true, true}
	return f
}

// fixedRate is a rate as fixed; an empty rate is zero.
func fixedRate(s string) (fixed, bool) {
	if s == "" {
		return fixed{}, true
	}
	return parseFixed(s)
}

// priceString returns the price of ticks as the wire writes it.
func (m *market) priceString(ticks int64) string {
	if s, ok := m.prices[ticks]; ok {
		return s
	}
	s := m.params.priceString(ticks)
	if m.prices == nil {
		m.prices = make(map[int64]string)
	}
	if len(m.prices) < maxCachedPrices {
		m.prices[ticks] = s
	}
	return s
}

// maxCachedPrices bounds the price strings a market keeps.
const maxCachedPrices = 4096

func (p params) priceString(ticks int64) string {
	if p.stepOK && ticks >= 0 {
		if f, ok := p.step.mul(fixed{coef: uint64(ticks)}); ok {
			return f.String()
		}
	}
	return p.Price(ticks).String()
}
