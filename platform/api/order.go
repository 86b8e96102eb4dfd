package api

import (
	"time"

	"github.com/shopspring/decimal"
)

// Order is the order resource of the interface: the WholeBlockOrder of
// docs/api.md "Orders, trades and positions" and the InclusionPreconfOrder
// of the same shape whose quantities are gas units. Ingress answers a
// place with it and query-api lists orders with it; this is its one
// definition. OrderID and MarketID are null only in a refused place's
// answer (no order was stored). The public listing leaves ClientOrderID
// null: a label the client chose would let anyone link the orders of one
// client.
type Order struct {
	OrderID      *int64  `json:"orderId"`
	MarketID     *int64  `json:"marketId"`
	InstrumentID string  `json:"instrumentId"`
	Side         bool    `json:"side"`
	OrderType    int     `json:"orderType"`
	Quantity     string  `json:"quantity"`
	Fulfilled    string  `json:"fulfilled"`
	Price        *string `json:"price"` // null for a market order without a worst price
	Fees         string  `json:"fees"`
	Status       int     `json:"status"`
	ErrorCode    *int    `json:"errorCode"`
	// ClientOrderID is null when there is none, and in public listings.
	ClientOrderID *string `json:"clientOrderId"`
	Passive       bool    `json:"passive"`
	CreateDate    int64   `json:"createDate"`
	Source        int     `json:"source"`
	UpdateDate    int64   `json:"updateDate"`
}

// OwnOrder is an order of the caller: the order with the account that
// placed it and the value-weighted average price of its fills (null
// before the first). Message names the rule that refused an order in a
// place answer; it is left out when empty.
type OwnOrder struct {
	Order
	AccountID         int64   `json:"accountId"`
	AverageTradePrice *string `json:"averageTradePrice"`
	Message           string  `json:"message,omitempty"`
}

// OrderRow is an order as the orders table keeps it (settler/schema):
// the columns the resource shows, in the types Postgres returns them.
type OrderRow struct {
	OrderID, MarketID int64
	InstrumentID      string
	Side              bool
	OrderType         int
	Quantity          decimal.Decimal
	Fulfilled         decimal.Decimal
	Price             decimal.NullDecimal
	Fees              decimal.Decimal
	Status            int
	ErrorCode         *int
	ClientOrderID     *string
	Passive           bool
	Source            int
	Created, Updated  time.Time
	AccountID         int64
	AverageTradePrice decimal.NullDecimal
}

// Order returns the row as the public listing shows it: no client order
// id.
func (r OrderRow) Order() Order {
	id, market := r.OrderID, r.MarketID
	return Order{
		OrderID: &id, MarketID: &market, InstrumentID: r.InstrumentID, Side: r.Side, OrderType: r.OrderType,
		Quantity: r.Quantity.String(), Fulfilled: r.Fulfilled.String(), Price: nullText(r.Price),
		Fees: r.Fees.String(), Status: r.Status, ErrorCode: r.ErrorCode, Passive: r.Passive,
		CreateDate: r.Created.UnixMilli(), Source: r.Source, UpdateDate: r.Updated.UnixMilli(),
	}
}

// Own returns the row as its owner sees it.
func (r OrderRow) Own() OwnOrder {
	o := OwnOrder{Order: r.Order(), AccountID: r.AccountID, AverageTradePrice: nullText(r.AverageTradePrice)}
	o.ClientOrderID = r.ClientOrderID
	return o
}

func nullText(d decimal.NullDecimal) *string {
	if !d.Valid {
		return nil
	}
	s := d.Decimal.String()
	return &s
}
