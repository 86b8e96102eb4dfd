package orderentry

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress/internal/catalog"
	"blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// order is one order of a place request on its way through the checks,
// the reservation and the response.
type order struct {
	userID int64
	item   placeItem
	market *catalog.Market // nil when the instrument is not an open market of the family
	qty    decimal.Decimal
	// price is the limit or worst price; for a market order without one,
	// the market's maxPrice (buy) or minPrice (sell).
	price decimal.Decimal
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

// check applies the rules of an order that need no database, in the order
// and with the codes of the matcher (docs/matcher.md "Validation of a
// place"), and prices the buy's reservation. The matcher applies the same
// rules (platform/market's Check) again when the command arrives; ingress
// applies them first so that a caller learns at once and nothing is
// reserved for an order the matcher would reject.
func check(cat *catalog.Catalog, fam topics.Family, userID int64, it placeItem, now time.Time) *order {
	o := &order{userID: userID, item: it}
	m := cat.Lookup(it.InstrumentID)
	if m == nil || m.Family != fam || !m.Open(now) {
		o.refuse(topics.CodeMarketNotOpen, "market %s is not open", short(it.InstrumentID))
		return o
	}
	o.market = m
	c, r := m.Check(market.Order{Buy: it.Side, OrderType: it.OrderType, Passive: it.Passive,
		ClientOrderID: it.ClientOrderID, Quantity: it.Quantity, Price: it.Price})
	if r.Code != 0 {
		o.code, o.message = r.Code, r.Message
		return o
	}
	o.qty, o.price = decimal.NewFromInt(c.Quantity), c.Price
	if it.Side {
		o.reserve = o.price.Mul(o.qty).Mul(decimal.NewFromInt(1).Add(m.Fees.Buy)).RoundCeil(ethDecimals)
	}
	return o
}
