package market

import (
	"fmt"
	"strconv"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Order is what Check needs of an order: the fields of a place request
// as the client wrote them.
type Order struct {
	// Buy is the side: true buys, false sells.
	Buy       bool
	OrderType int
	Passive   bool
	// ClientOrderID is "" when the client gave none; ClientOrderIDLive
	// says the account already has a live order under it (only the matcher
	// knows).
	ClientOrderID     string
	ClientOrderIDLive bool
	// Quantity and Price are decimal text; Price is "" for a market order
	// without a worst price.
	Quantity, Price string
}

// Checked is an order that passed Check, its amounts read.
type Checked struct {
	Quantity int64
	// Price is the client's price, or for a market order without one the
	// worst the market allows: maxPrice for a buy, minPrice for a sell.
	// PriceTicks is the same in ticks of priceStep.
	Price      decimal.Decimal
	PriceTicks int64
}

// Refusal says why Check refused an order: an application code
// (topics/codes.go) and a message naming the rule. Code 0 is no refusal.
type Refusal struct {
	Code    int
	Message string
}

func refuse(code int, format string, args ...any) Refusal {
	return Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Check applies the rules of an order that depend only on the order and
// its market's parameters (docs/matcher.md "Validation of a place"), in
// their order: order type, passive, client order id, quantity, price. The
// first rule broken decides the refusal.
func (p Params) Check(o Order) (Checked, Refusal) {
	switch {
	case o.OrderType < topics.OrderTypeMarket || o.OrderType > topics.OrderTypeFillOrKill:
		return Checked{}, refuse(topics.CodeValidation, "orderType %d is not 1, 2 or 3", o.OrderType)
	case o.Passive && o.OrderType != topics.OrderTypeLimit:
		return Checked{}, refuse(topics.CodePassiveWouldTake, "a passive order must be a limit order: market and fill-or-kill orders take liquidity")
	}
	if err := topics.CheckClientOrderID(o.ClientOrderID); err != nil {
		return Checked{}, refuse(topics.CodeClientOrderID, "%s", err.Error())
	}
	if o.ClientOrderID != "" && o.ClientOrderIDLive {
		return Checked{}, refuse(topics.CodeClientOrderID, "clientOrderId %s is used by a live order", o.ClientOrderID)
	}
	var c Checked
	var r Refusal
	if c.Quantity, r = p.checkQuantity(o.Quantity); r.Code != 0 {
		return Checked{}, r
	}
	if c.Price, c.PriceTicks, r = p.checkPrice(o); r.Code != 0 {
		return Checked{}, r
	}
	return c, Refusal{}
}

func (p Params) checkQuantity(text string) (int64, Refusal) {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil && text[0] != '+' {
		// The common case, a plain integer, without decimals; anything
		// that breaks a rule takes the path below, which words it.
		if n >= p.MinQuantity && n <= p.MaxQuantity && n%p.QuantityStep == 0 {
			return n, Refusal{}
		}
	}
	q, ok := ParseAmount(text)
	switch {
	case !ok:
		return 0, refuse(topics.CodeValidation, "quantity %q is not a decimal", Short(text))
	case q.LessThan(decimal.NewFromInt(p.MinQuantity)):
		return 0, refuse(topics.CodeQuantityBelowMin, "quantity %s is below minQuantity %d", q, p.MinQuantity)
	case q.GreaterThan(decimal.NewFromInt(p.MaxQuantity)):
		return 0, refuse(topics.CodeQuantityInvalid, "quantity %s is above maxQuantity %d", q, p.MaxQuantity)
	case !q.IsInteger() || q.IntPart()%p.QuantityStep != 0:
		return 0, refuse(topics.CodeQuantityInvalid, "quantity %s is not a multiple of quantityStep %d", q, p.QuantityStep)
	}
	return q.IntPart(), Refusal{}
}

func (p Params) checkPrice(o Order) (decimal.Decimal, int64, Refusal) {
	if o.Price == "" {
		switch {
		case o.OrderType != topics.OrderTypeMarket:
			return decimal.Zero, 0, refuse(topics.CodeValidation, "price is required for limit and fill-or-kill orders")
		case o.Buy:
			return p.MaxPrice, p.MaxTick, Refusal{}
		}
		return p.MinPrice, p.MinTick, Refusal{}
	}
	d, ok := ParseAmount(o.Price)
	switch {
	case !ok:
		return decimal.Zero, 0, refuse(topics.CodeValidation, "price %q is not a decimal", Short(o.Price))
	case !d.Mod(p.PriceStep).IsZero():
		return decimal.Zero, 0, refuse(topics.CodePriceInvalid, "price %s is not a multiple of priceStep %s", d, p.PriceStep)
	case d.LessThan(p.MinPrice) || d.GreaterThan(p.MaxPrice):
		return decimal.Zero, 0, refuse(topics.CodePriceInvalid, "price %s is outside [%s, %s]", d, p.MinPrice, p.MaxPrice)
	}
	// Within [minPrice, maxPrice] and on the step, so the ticks fit.
	t, _ := Ticks(d, p.PriceStep)
	return d, t, Refusal{}
}

// maxAmountLen bounds the text of a price or quantity: longer text is not
// a price or quantity any market accepts, and decimals that long would
// make every later step slow.
const maxAmountLen = 64

// ParseAmount reads a plain decimal: an optional minus sign, digits, and
// an optional fraction. Exponents, a leading plus or dot and anything
// longer than maxAmountLen are not amounts on this interface.
func ParseAmount(s string) (decimal.Decimal, bool) {
	if s == "" || len(s) > maxAmountLen {
		return decimal.Decimal{}, false
	}
	i := 0
	if s[0] == '-' {
		i = 1
	}
	digits, dot := 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0 && i < len(s)-1:
			dot = true
		default:
			return decimal.Decimal{}, false
		}
	}
	if digits == 0 {
		return decimal.Decimal{}, false
	}
	d, err := decimal.NewFromString(s)
	return d, err == nil
}

// Short cuts client text to 40 bytes for a message.
func Short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
