package trading

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress/internal/catalog"
	"blockspace.exchange/topics"
)

// order is one order of a place request on its way through the checks,
// the reservation and the response.
type order struct {
	userID int64
	item   placeItem
	market *catalog.Market // nil when the instrument is not an open market of the family
	qty    decimal.Decimal
	price  decimal.Decimal // the limit or worst price; zero for a market order without one
	// reserve is what a buy locks: price (maxPrice for a market buy
	// without one) × quantity × (1 + buyFeeRate), rounded up to 18
	// decimals. Zero for sells.
	reserve decimal.Decimal
	// code and message say why the order was refused; code 0 while it
	// is accepted so far.
	code    int
	message string
	// id and created are set when the order is stored.
	id      int64
	created time.Time
	// decision is the matcher's, when the service waits for it.
	decision *decision
}

// priceText is the price the order row and command carry: the client's
// price in canonical form, nil for a market order without one.
func (o *order) priceText() *string {
	if o.item.Price == "" {
		return nil
	}
	p := o.price.String()
	return &p
}

func (o *order) clientOrderID() *string {
	if o.item.ClientOrderID == "" {
		return nil
	}
	return &o.item.ClientOrderID
}

func (o *order) refuse(code int, format string, args ...any) {
	o.code, o.message = code, fmt.Sprintf(format, args...)
}

// ethDecimals is the precision of token 1 (ETH): reservations are
// rounded up to it.
const ethDecimals = 18

// maxAmountLen bounds the text of a price or quantity: longer text is not
// a price or quantity any market accepts, and decimals that long would
// make every later step slow.
const maxAmountLen = 64

// check applies the rules of an order that need no database, in the order
// and with the codes of the matcher (docs/matcher.md "Validation of a
// place"), and prices the buy's reservation. The matcher applies the same
// rules again when the command arrives; ingress applies them first so that
// a caller learns at once and nothing is reserved for an order the
// matcher would reject.
func check(cat *catalog.Catalog, fam topics.Family, userID int64, it placeItem, now time.Time) *order {
	o := &order{userID: userID, item: it}
	m := cat.Lookup(it.InstrumentID)
	if m == nil || m.Family != fam || !m.Open(now) {
		o.refuse(topics.CodeMarketNotOpen, "market %s is not open", short(it.InstrumentID))
		return o
	}
	o.market = m
	switch {
	case it.OrderType < topics.OrderTypeMarket || it.OrderType > topics.OrderTypeFillOrKill:
		o.refuse(topics.CodeValidation, "orderType %d is not 1, 2 or 3", it.OrderType)
	case it.Passive && it.OrderType != topics.OrderTypeLimit:
		o.refuse(topics.CodePassiveWouldTake, "a passive order must be a limit order: market and fill-or-kill orders take liquidity")
	default:
		if err := topics.CheckClientOrderID(it.ClientOrderID); err != nil {
			o.refuse(topics.CodeClientOrderID, "%s", err.Error())
		}
	}
	if o.code == 0 {
		o.checkQuantity(m.Rules)
	}
	if o.code == 0 {
		o.checkPrice(m.Rules)
	}
	if o.code == 0 && it.Side {
		o.reserve = o.price.Mul(o.qty).Mul(decimal.NewFromInt(1).Add(m.Rules.BuyFeeRate)).RoundCeil(ethDecimals)
	}
	return o
}

func (o *order) checkQuantity(r catalog.Rules) {
	text := o.item.Quantity
	q, ok := parseAmount(text)
	switch {
	case !ok:
		o.refuse(topics.CodeValidation, "quantity %q is not a decimal", short(text))
	case q.LessThan(decimal.NewFromInt(r.MinQuantity)):
		o.refuse(topics.CodeQuantityBelowMin, "quantity %s is below minQuantity %d", q, r.MinQuantity)
	case q.GreaterThan(decimal.NewFromInt(r.MaxQuantity)):
		o.refuse(topics.CodeQuantityInvalid, "quantity %s is above maxQuantity %d", q, r.MaxQuantity)
	case !q.IsInteger() || q.IntPart()%r.QuantityStep != 0:
		o.refuse(topics.CodeQuantityInvalid, "quantity %s is not a multiple of quantityStep %d", q, r.QuantityStep)
	default:
		o.qty = q
	}
}

func (o *order) checkPrice(r catalog.Rules) {
	text := o.item.Price
	if text == "" {
		if o.item.OrderType != topics.OrderTypeMarket {
			o.refuse(topics.CodeValidation, "price is required for limit and fill-or-kill orders")
			return
		}
		if o.item.Side {
			o.price = r.MaxPrice
		}
		return
	}
	p, ok := parseAmount(text)
	switch {
	case !ok:
		o.refuse(topics.CodeValidation, "price %q is not a decimal", short(text))
	case !p.Mod(r.PriceStep).IsZero():
		o.refuse(topics.CodePriceInvalid, "price %s is not a multiple of priceStep %s", p, r.PriceStep)
	case p.LessThan(r.MinPrice) || p.GreaterThan(r.MaxPrice):
		o.refuse(topics.CodePriceInvalid, "price %s is outside [%s, %s]", p, r.MinPrice, r.MaxPrice)
	default:
		o.price = p
	}
}

// parseAmount reads a plain decimal: an optional minus sign, digits, and
// an optional fraction. Exponents, a leading plus or dot and anything
// longer than maxAmountLen are not amounts on this interface.
func parseAmount(s string) (decimal.Decimal, bool) {
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
