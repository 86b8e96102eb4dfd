package engine

import (
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// params are a market's limits with prices in ticks of priceStep and
// quantities in units, checked once at market open so that orders are
// validated with integer comparisons.
type params struct {
	priceStep        decimal.Decimal
	step             fixed // priceStep, when stepOK
	stepOK           bool
	minTick, maxTick int64
	qtyStep          int64
	minQty, maxQty   int64
}

// feeRates are the slot's fee rates as fractions of trade value.
type feeRates struct {
	buy, primarySell, secondarySell decimal.Decimal
	// The same as fixed, when ok: trades then compute fees in integers.
	fixedBuy, fixedPrimary, fixedSecondary fixed
	fixedOK                                bool
	// raw are the rates as the market.open wrote them, for snapshots.
	raw [3]string
}

func parseParams(m topics.MarketOpen) (params, error) {
	step, err := positiveDecimal("priceStep", m.PriceStep)
	if err != nil {
		return params{}, err
	}
	p := params{priceStep: step, qtyStep: 1, minQty: 1, maxQty: 1}
	p.step, p.stepOK = parseFixed(m.PriceStep)
	if p.minTick, err = priceTicks("minPrice", m.MinPrice, step); err != nil {
		return params{}, err
	}
	if p.maxTick, err = priceTicks("maxPrice", m.MaxPrice, step); err != nil {
		return params{}, err
	}
	if p.minTick < 1 || p.maxTick < p.minTick {
		return params{}, fmt.Errorf("price range [%s, %s] is empty or not positive", m.MinPrice, m.MaxPrice)
	}
	if m.Family == topics.WholeBlock {
		return p, nil
	}
	if p.qtyStep, err = positiveInt("quantityStep", m.QuantityStep); err != nil {
		return params{}, err
	}
	if p.minQty, err = positiveInt("minQuantity", m.MinQuantity); err != nil {
		return params{}, err
	}
	if p.maxQty, err = positiveInt("maxQuantity", m.MaxQuantity); err != nil {
		return params{}, err
	}
	if p.maxQty < p.minQty {
		return params{}, fmt.Errorf("maxQuantity %d is below minQuantity %d", p.maxQty, p.minQty)
	}
	return p, nil
}

func parseFees(m topics.MarketOpen) (feeRates, error) {
	f := feeRates{raw: [3]string{m.BuyFeeRate, m.PrimarySellFeeRate, m.SecondarySellFeeRate}}
	var err error
	if f.buy, err = rate("buyFeeRate", m.BuyFeeRate); err != nil {
		return feeRates{}, err
	}
	if f.primarySell, err = rate("primarySellFeeRate", m.PrimarySellFeeRate); err != nil {
		return feeRates{}, err
	}
	if f.secondarySell, err = rate("secondarySellFeeRate", m.SecondarySellFeeRate); err != nil {
		return feeRates{}, err
	}
	var ok [3]bool
	f.fixedBuy, ok[0] = fixedRate(m.BuyFeeRate)
	f.fixedPrimary, ok[1] = fixedRate(m.PrimarySellFeeRate)
	f.fixedSecondary, ok[2] = fixedRate(m.SecondarySellFeeRate)
	f.fixedOK = ok == [3]bool{true, true, true}
	return f, nil
}

func rate(name, s string) (decimal.Decimal, error) {
	if s == "" {
		return decimal.Zero, nil
	}
	d, err := decimal.NewFromString(s)
	if err != nil || d.IsNegative() || d.GreaterThanOrEqual(decimal.NewFromInt(1)) {
		return decimal.Zero, fmt.Errorf("%s %q is not a fraction from 0 to below 1", name, s)
	}
	return d, nil
}

// fixedRate is a rate as fixed; an empty rate is zero.
func fixedRate(s string) (fixed, bool) {
	if s == "" {
		return fixed{}, true
	}
	return parseFixed(s)
}

func positiveDecimal(name, s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil || !d.IsPositive() {
		return decimal.Zero, fmt.Errorf("%s %q is not a positive decimal", name, s)
	}
	return d, nil
}

func positiveInt(name, s string) (int64, error) {
	d, err := decimal.NewFromString(s)
	if err != nil || !d.IsPositive() || !d.IsInteger() || !d.BigInt().IsInt64() {
		return 0, fmt.Errorf("%s %q is not a positive integer", name, s)
	}
	return d.IntPart(), nil
}

func priceTicks(name, s string, step decimal.Decimal) (int64, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a decimal", name, s)
	}
	t, err := toTicks(d, step)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", name, s, err)
	}
	return t, nil
}

var (
	errNotMultiple = errors.New("not a multiple of priceStep")
	errTooLarge    = errors.New("too many ticks")
)

// toTicks returns d / step when it is a whole number that fits an int64.
func toTicks(d, step decimal.Decimal) (int64, error) {
	if !d.Mod(step).IsZero() {
		return 0, errNotMultiple
	}
	q := d.Div(step).Truncate(0)
	if !q.BigInt().IsInt64() {
		return 0, errTooLarge
	}
	return q.IntPart(), nil
}

// price returns the decimal price of ticks.
func (p params) price(ticks int64) decimal.Decimal {
	return p.priceStep.Mul(decimal.NewFromInt(ticks))
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
	return p.price(ticks).String()
}
