package market

import (
	"strings"
	"testing"

	"blockspace.exchange/topics"
)

func preconfOpen() topics.MarketOpen {
	return topics.MarketOpen{Slot: 7, Family: topics.InclusionPreconf,
		PriceStep: "0.000000001", MinPrice: "0.000000002", MaxPrice: "0.0001",
		QuantityStep: "1000", MinQuantity: "21000", MaxQuantity: "30000000",
		SellerUserID: 1, SellerAccountID: 2, TotalPreconf: 30_000_000, BuyFeeRate: "0.01"}
}

func mustNew(t *testing.T, o topics.MarketOpen) Params {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheck is the one table of the order rules that ingress and the
// matcher share: every rule, its code and its message.
func TestCheck(t *testing.T) {
	p := mustNew(t, preconfOpen())
	limit := func(qty, price string) Order {
		return Order{Buy: true, OrderType: topics.OrderTypeLimit, Quantity: qty, Price: price}
	}
	tests := []struct {
		name      string
		order     Order
		code      int
		message   string
		qty       int64
		price     string
		priceTick int64
	}{
		{name: "limit buy", order: limit("21000", "0.000000005"), qty: 21000, price: "0.000000005", priceTick: 5},
		{name: "quantity with a zero fraction", order: limit("22000.0", "0.000000005"), qty: 22000, price: "0.000000005", priceTick: 5},
		{name: "market buy without price takes maxPrice",
			order: Order{Buy: true, OrderType: topics.OrderTypeMarket, Quantity: "21000"}, qty: 21000, price: "0.0001", priceTick: 100000},
		{name: "market sell without price takes minPrice",
			order: Order{OrderType: topics.OrderTypeMarket, Quantity: "21000"}, qty: 21000, price: "0.000000002", priceTick: 2},
		{name: "order type 0", order: Order{OrderType: 0, Quantity: "21000", Price: "0.000000005"},
			code: topics.CodeValidation, message: "orderType 0 is not 1, 2 or 3"},
		{name: "order type 4", order: Order{OrderType: 4, Quantity: "21000", Price: "0.000000005"},
			code: topics.CodeValidation, message: "orderType 4 is not 1, 2 or 3"},
		{name: "passive fill-or-kill", order: Order{OrderType: topics.OrderTypeFillOrKill, Passive: true, Quantity: "21000", Price: "0.000000005"},
			code: topics.CodePassiveWouldTake, message: "a passive order must be a limit order: market and fill-or-kill orders take liquidity"},
		{name: "client order id with a space", order: Order{OrderType: topics.OrderTypeLimit, ClientOrderID: "a b", Quantity: "21000", Price: "0.000000005"},
			code: topics.CodeClientOrderID, message: "clientOrderId has a character outside printable ASCII"},
		{name: "client order id too long", order: Order{OrderType: topics.OrderTypeLimit, ClientOrderID: strings.Repeat("x", topics.MaxClientOrderIDLen+1), Quantity: "21000", Price: "0.000000005"},
			code: topics.CodeClientOrderID, message: "clientOrderId is longer than 32 characters"},
		{name: "client order id of a live order", order: Order{OrderType: topics.OrderTypeLimit, ClientOrderID: "c1", ClientOrderIDLive: true, Quantity: "1", Price: "x"},
			code: topics.CodeClientOrderID, message: "clientOrderId c1 is used by a live order"},
		{name: "quantity not a decimal", order: limit("1e5", "0.000000005"),
			code: topics.CodeValidation, message: `quantity "1e5" is not a decimal`},
		{name: "quantity text cut in the message", order: limit(strings.Repeat("z", 50), "0.000000005"),
			code: topics.CodeValidation, message: `quantity "` + strings.Repeat("z", 40) + `…" is not a decimal`},
		{name: "quantity below min", order: limit("20000", "0.000000005"),
			code: topics.CodeQuantityBelowMin, message: "quantity 20000 is below minQuantity 21000"},
		{name: "quantity above max", order: limit("30001000", "0.000000005"),
			code: topics.CodeQuantityInvalid, message: "quantity 30001000 is above maxQuantity 30000000"},
		{name: "quantity off the step", order: limit("21500", "0.000000005"),
			code: topics.CodeQuantityInvalid, message: "quantity 21500 is not a multiple of quantityStep 1000"},
		{name: "fractional quantity", order: limit("21000.5", "0.000000005"),
			code: topics.CodeQuantityInvalid, message: "quantity 21000.5 is not a multiple of quantityStep 1000"},
		{name: "quantity zero", order: limit("0", "0.000000005"),
			code: topics.CodeQuantityBelowMin, message: "quantity 0 is below minQuantity 21000"},
		{name: "quantity word", order: limit("one", "0.000000005"),
			code: topics.CodeValidation, message: `quantity "one" is not a decimal`},
		{name: "limit without price", order: limit("21000", ""),
			code: topics.CodeValidation, message: "price is required for limit and fill-or-kill orders"},
		{name: "price with a plus sign", order: limit("21000", "+0.000000005"),
			code: topics.CodeValidation, message: `price "+0.000000005" is not a decimal`},
		{name: "price with a trailing dot", order: limit("21000", "1."),
			code: topics.CodeValidation, message: `price "1." is not a decimal`},
		{name: "price zero", order: limit("21000", "0"),
			code: topics.CodePriceInvalid, message: "price 0 is outside [0.000000002, 0.0001]"},
		{name: "price negative", order: limit("21000", "-0.000000005"),
			code: topics.CodePriceInvalid, message: "price -0.000000005 is outside [0.000000002, 0.0001]"},
		{name: "fill-or-kill without price", order: Order{OrderType: topics.OrderTypeFillOrKill, Quantity: "21000"},
			code: topics.CodeValidation, message: "price is required for limit and fill-or-kill orders"},
		{name: "passive market order", order: Order{OrderType: topics.OrderTypeMarket, Passive: true, Quantity: "21000"},
			code: topics.CodePassiveWouldTake, message: "a passive order must be a limit order: market and fill-or-kill orders take liquidity"},
		{name: "price off the step", order: limit("21000", "0.0000000055"),
			code: topics.CodePriceInvalid, message: "price 0.0000000055 is not a multiple of priceStep 0.000000001"},
		{name: "price below min", order: limit("21000", "0.000000001"),
			code: topics.CodePriceInvalid, message: "price 0.000000001 is outside [0.000000002, 0.0001]"},
		{name: "price above max", order: limit("21000", "1"),
			code: topics.CodePriceInvalid, message: "price 1 is outside [0.000000002, 0.0001]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, r := p.Check(tc.order)
			if r.Code != tc.code || r.Message != tc.message {
				t.Fatalf("refusal = %d %q, want %d %q", r.Code, r.Message, tc.code, tc.message)
			}
			if tc.code != 0 {
				return
			}
			if c.Quantity != tc.qty || c.Price.String() != tc.price || c.PriceTicks != tc.priceTick {
				t.Fatalf("checked = %d %s (%d ticks), want %d %s (%d)", c.Quantity, c.Price, c.PriceTicks, tc.qty, tc.price, tc.priceTick)
			}
		})
	}
}

// TestCheckWholeBlock: a whole-block market takes quantity 1 only.
func TestCheckWholeBlock(t *testing.T) {
	o := preconfOpen()
	o.Family, o.QuantityStep, o.MinQuantity, o.MaxQuantity = topics.WholeBlock, "", "", ""
	p := mustNew(t, o)
	if _, r := p.Check(Order{OrderType: topics.OrderTypeLimit, Quantity: "1", Price: "0.00001"}); r.Code != 0 {
		t.Fatalf("quantity 1 refused: %v", r)
	}
	if _, r := p.Check(Order{OrderType: topics.OrderTypeLimit, Quantity: "2", Price: "0.00001"}); r.Code != topics.CodeQuantityInvalid {
		t.Fatalf("quantity 2: %v, want code %d", r, topics.CodeQuantityInvalid)
	}
	if _, r := p.Check(Order{OrderType: topics.OrderTypeLimit, Quantity: "0.5", Price: "0.00001"}); r.Code != topics.CodeQuantityBelowMin {
		t.Fatalf("quantity 0.5: %v, want code %d", r, topics.CodeQuantityBelowMin)
	}
}
