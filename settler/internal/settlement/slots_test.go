package settlement

import (
	"testing"

	"blockspace.exchange/topics"
)

// A slot takes its seller from the first market.open that opens a market
// by market.New, the rule the matcher opens it by, and whose seller owns
// the account; any other leaves the slot waiting.
func TestSlotOpenTakesTheSellerOfAMarketThatOpens(t *testing.T) {
	valid := func() topics.MarketOpen {
		return topics.MarketOpen{Slot: 7, Family: topics.WholeBlock, PriceStep: "0.01", MinPrice: "0.01", MaxPrice: "10",
			SellerUserID: 3, SellerAccountID: 30, TotalGas: 2_000_000, TotalPreconf: 1_000_000}
	}
	owns := func(account, user int64) bool { return account == 30 && user == 3 || account == 40 && user == 4 }
	for _, tc := range []struct {
		name  string
		edit  func(*topics.MarketOpen)
		taken bool
	}{
		{"valid", func(*topics.MarketOpen) {}, true},
		{"no seller", func(o *topics.MarketOpen) { o.SellerUserID = 0 }, false},
		{"negative preconf", func(o *topics.MarketOpen) { o.TotalPreconf = -1 }, false},
		{"seller does not own the account", func(o *topics.MarketOpen) { o.SellerAccountID = 40 }, false},
		{"no price step", func(o *topics.MarketOpen) { o.PriceStep = "" }, false},
		{"fee rate of 1", func(o *topics.MarketOpen) { o.BuyFeeRate = "1" }, false},
		{"preconf quantity bound below the minimum", func(o *topics.MarketOpen) {
			o.Family, o.QuantityStep, o.MinQuantity, o.MaxQuantity = topics.InclusionPreconf, "1000", "2000", "1000"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.edit(&o)
			s := &slot{n: 7}
			if got := s.open(&o, owns); got != tc.taken {
				t.Fatalf("open = %v, want %v", got, tc.taken)
			}
			if !tc.taken {
				if s.sellerAccount != 0 || s.dirty {
					t.Fatalf("slot changed by a market.open it did not take: %+v", s)
				}
				return
			}
			if s.sellerUser != 3 || s.sellerAccount != 30 || s.totalPreconf != 1_000_000 || !s.dirty {
				t.Fatalf("slot after open: %+v", s)
			}
			second := valid()
			second.SellerUserID, second.SellerAccountID, second.TotalPreconf = 4, 40, 5
			if s.open(&second, owns) || s.sellerAccount != 30 || s.totalPreconf != 1_000_000 {
				t.Fatalf("a second market.open changed the slot: %+v", s)
			}
		})
	}
}
