// Package market holds the rules of a market that more than one service
// applies: the parameters a market.open command fixes (New) and the
// validation of an order against them (Check). Ingress checks an order
// before anything is reserved and the matcher checks it again when the
// command arrives; both call Check, so the two can never disagree on a
// code or a message. The ingress catalog, the matcher, query-api and the
// settler each keep their own state of a market but derive its
// parameters here.
//
// The package lives in platform rather than in the contract module topics
// because the rules are exact decimal arithmetic (shopspring/decimal), and
// topics depends on the standard library only.
package market

import (
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Params are a market's parameters as one market.open fixes them, checked
// and derived once: prices as decimals and as whole ticks of PriceStep,
// quantities as integers, fee rates as fractions.
type Params struct {
	Family     topics.Family
	Slot       uint64
	ID         int64
	Instrument string

	PriceStep, MinPrice, MaxPrice decimal.Decimal
	// MinTick and MaxTick are MinPrice and MaxPrice in ticks of PriceStep.
	MinTick, MaxTick int64
	// QuantityStep, MinQuantity and MaxQuantity are gas units in
	// inclusion-preconf markets and 1 in whole-block markets.
	QuantityStep, MinQuantity, MaxQuantity int64

	Fees Fees

	// SellerUserID and SellerAccountID name the slot's seller;
	// TotalPreconf is the slot's preconf gas.
	SellerUserID, SellerAccountID, TotalPreconf int64
	// Maturity is when trading closes; zero when the market.open did not
	// say.
	Maturity time.Time

	// Open is the command as it was written, for readers that show its
	// text (query-api's market listings, the matcher's snapshots).
	Open topics.MarketOpen
}

// Fees are a slot's fee rates as fractions of trade value; Raw are the
// rates as the market.open wrote them ("" is zero).
type Fees struct {
	Buy, PrimarySell, SecondarySell decimal.Decimal
	Raw                             [3]string
}

// New checks a market.open and derives its parameters. It refuses what
// no market may open with: a price step that is not positive, minPrice or
// maxPrice off the step, not positive or out of int64 ticks, an empty
// price range; fee rates outside [0, 1); no seller or a negative preconf
// total; for inclusion preconf, a quantity step or bound that is not a
// positive integer, or maxQuantity below minQuantity.
func New(o topics.MarketOpen) (Params, error) {
	p := Params{
		Family: o.Family, Slot: o.Slot, ID: topics.MarketID(o.Family, o.Slot),
		Instrument:   topics.InstrumentID(o.Family, o.Slot),
		QuantityStep: 1, MinQuantity: 1, MaxQuantity: 1,
		SellerUserID: o.SellerUserID, SellerAccountID: o.SellerAccountID, TotalPreconf: o.TotalPreconf,
		Open: o,
	}
	if o.MaturityTime > 0 {
		p.Maturity = time.UnixMilli(o.MaturityTime)
	}
	if err := p.parsePrices(o); err != nil {
		return Params{}, err
	}
	var err error
	if p.Fees, err = ParseFees(o.BuyFeeRate, o.PrimarySellFeeRate, o.SecondarySellFeeRate); err != nil {
		return Params{}, err
	}
	if o.SellerUserID <= 0 || o.SellerAccountID <= 0 || o.TotalPreconf < 0 {
		return Params{}, fmt.Errorf("seller %d/%d or totalPreconf %d invalid", o.SellerUserID, o.SellerAccountID, o.TotalPreconf)
	}
	if o.Family == topics.WholeBlock {
		return p, nil
	}
	if err := p.parseQuantities(o); err != nil {
		return Params{}, err
	}
	return p, nil
}

func (p *Params) parsePrices(o topics.MarketOpen) error {
	var err error
	if p.PriceStep, err = positiveDecimal("priceStep", o.PriceStep); err != nil {
		return err
	}
	if p.MinPrice, p.MinTick, err = priceTicks("minPrice", o.MinPrice, p.PriceStep); err != nil {
		return err
	}
	if p.MaxPrice, p.MaxTick, err = priceTicks("maxPrice", o.MaxPrice, p.PriceStep); err != nil {
		return err
	}
	if p.MinTick < 1 || p.MaxTick < p.MinTick {
		return fmt.Errorf("price range [%s, %s] is empty or not positive", o.MinPrice, o.MaxPrice)
	}
	return nil
}

func (p *Params) parseQuantities(o topics.MarketOpen) error {
	var err error
	if p.QuantityStep, err = positiveInt("quantityStep", o.QuantityStep); err != nil {
		return err
	}
	if p.MinQuantity, err = positiveInt("minQuantity", o.MinQuantity); err != nil {
		return err
	}
	if p.MaxQuantity, err = positiveInt("maxQuantity", o.MaxQuantity); err != nil {
		return err
	}
	if p.MaxQuantity < p.MinQuantity {
		return fmt.Errorf("maxQuantity %d is below minQuantity %d", p.MaxQuantity, p.MinQuantity)
	}
	return nil
}

// ParseFees reads a slot's three fee rates: each empty (zero) or a
// fraction from 0 to below 1.
func ParseFees(buy, primarySell, secondarySell string) (Fees, error) {
	f := Fees{Raw: [3]string{buy, primarySell, secondarySell}}
	var err error
	if f.Buy, err = rate("buyFeeRate", buy); err != nil {
		return Fees{}, err
	}
	if f.PrimarySell, err = rate("primarySellFeeRate", primarySell); err != nil {
		return Fees{}, err
	}
	if f.SecondarySell, err = rate("secondarySellFeeRate", secondarySell); err != nil {
		return Fees{}, err
	}
	return f, nil
}

// Price returns the decimal price of ticks.
func (p Params) Price(ticks int64) decimal.Decimal {
	return p.PriceStep.Mul(decimal.NewFromInt(ticks))
}

// OpenAt reports whether the market's maturity has not passed at now.
func (p Params) OpenAt(now time.Time) bool {
	return p.Maturity.IsZero() || now.Before(p.Maturity)
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

func priceTicks(name, s string, step decimal.Decimal) (decimal.Decimal, int64, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, 0, fmt.Errorf("%s %q is not a decimal", name, s)
	}
	t, err := Ticks(d, step)
	if err != nil {
		return decimal.Zero, 0, fmt.Errorf("%s %s: %w", name, s, err)
	}
	return d, t, nil
}

// Errors of Ticks.
var (
	ErrNotMultiple = errors.New("not a multiple of priceStep")
	ErrTooLarge    = errors.New("too many ticks")
)

// Ticks returns d / step when it is a whole number that fits an int64.
func Ticks(d, step decimal.Decimal) (int64, error) {
	if !d.Mod(step).IsZero() {
		return 0, ErrNotMultiple
	}
	q := d.Div(step).Truncate(0)
	if !q.BigInt().IsInt64() {
		return 0, ErrTooLarge
	}
	return q.IntPart(), nil
}
