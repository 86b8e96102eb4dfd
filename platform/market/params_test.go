package market

import (
	"testing"
	"time"

	"blockspace.exchange/topics"
)

func TestNewDerives(t *testing.T) {
	o := preconfOpen()
	o.MaturityTime, o.PrimarySellFeeRate = 1_700_000_000_000, "0.002"
	p := mustNew(t, o)
	if p.ID != topics.MarketID(topics.InclusionPreconf, 7) || p.Instrument != "ETH-PC-7" {
		t.Fatalf("id %d instrument %s", p.ID, p.Instrument)
	}
	if p.MinTick != 2 || p.MaxTick != 100000 || p.PriceStep.String() != "0.000000001" {
		t.Fatalf("ticks [%d, %d] step %s", p.MinTick, p.MaxTick, p.PriceStep)
	}
	if p.QuantityStep != 1000 || p.MinQuantity != 21000 || p.MaxQuantity != 30_000_000 {
		t.Fatalf("quantities %d %d %d", p.QuantityStep, p.MinQuantity, p.MaxQuantity)
	}
	if p.Fees.Buy.String() != "0.01" || p.Fees.PrimarySell.String() != "0.002" || !p.Fees.SecondarySell.IsZero() ||
		p.Fees.Raw != [3]string{"0.01", "0.002", ""} {
		t.Fatalf("fees %+v", p.Fees)
	}
	if !p.Maturity.Equal(time.UnixMilli(o.MaturityTime)) || !p.OpenAt(p.Maturity.Add(-time.Millisecond)) || p.OpenAt(p.Maturity) {
		t.Fatalf("maturity %v", p.Maturity)
	}
	if p.Price(p.MaxTick).String() != "0.0001" {
		t.Fatalf("price of max tick %s", p.Price(p.MaxTick))
	}
}

func TestNewWholeBlockQuantityIsOne(t *testing.T) {
	o := preconfOpen()
	o.Family, o.QuantityStep, o.MinQuantity, o.MaxQuantity = topics.WholeBlock, "", "", ""
	p := mustNew(t, o)
	if p.QuantityStep != 1 || p.MinQuantity != 1 || p.MaxQuantity != 1 || !p.Maturity.IsZero() || !p.OpenAt(time.Now()) {
		t.Fatalf("whole block %+v", p)
	}
}

// TestNewRefuses: every parameter a market cannot open with.
func TestNewRefuses(t *testing.T) {
	tests := map[string]func(*topics.MarketOpen){
		"priceStep zero":           func(o *topics.MarketOpen) { o.PriceStep = "0" },
		"priceStep text":           func(o *topics.MarketOpen) { o.PriceStep = "x" },
		"minPrice off the step":    func(o *topics.MarketOpen) { o.MinPrice = "0.0000000025" },
		"minPrice zero":            func(o *topics.MarketOpen) { o.MinPrice = "0" },
		"maxPrice below minPrice":  func(o *topics.MarketOpen) { o.MaxPrice = "0.000000001" },
		"maxPrice too many ticks":  func(o *topics.MarketOpen) { o.MaxPrice = "100000000000000" },
		"buy fee rate 1":           func(o *topics.MarketOpen) { o.BuyFeeRate = "1" },
		"primary fee negative":     func(o *topics.MarketOpen) { o.PrimarySellFeeRate = "-0.1" },
		"secondary fee text":       func(o *topics.MarketOpen) { o.SecondarySellFeeRate = "a" },
		"no seller user":           func(o *topics.MarketOpen) { o.SellerUserID = 0 },
		"no seller account":        func(o *topics.MarketOpen) { o.SellerAccountID = 0 },
		"negative preconf":         func(o *topics.MarketOpen) { o.TotalPreconf = -1 },
		"quantity step fractional": func(o *topics.MarketOpen) { o.QuantityStep = "1.5" },
		"min quantity missing":     func(o *topics.MarketOpen) { o.MinQuantity = "" },
		"max below min quantity":   func(o *topics.MarketOpen) { o.MaxQuantity = "20000" },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			o := preconfOpen()
			change(&o)
			if _, err := New(o); err == nil {
				t.Fatalf("New accepted %+v", o)
			}
		})
	}
}
