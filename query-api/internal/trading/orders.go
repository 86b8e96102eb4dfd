package trading

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
)

// Order is the WholeBlockOrder resource of the interface (docs/api.md
// "Orders, trades and positions"), and the
// InclusionPreconfOrder of the same shape whose quantities are gas units.
// The public listing leaves ClientOrderID null: a label the client chose
// would let anyone link the orders of one client.
type Order struct {
	OrderID       int64               `json:"orderId"`
	MarketID      int64               `json:"marketId"`
	InstrumentID  string              `json:"instrumentId"`
	Side          bool                `json:"side"`
	OrderType     int                 `json:"orderType"`
	Quantity      decimal.Decimal     `json:"quantity"`
	Fulfilled     decimal.Decimal     `json:"fulfilled"`
	Price         decimal.NullDecimal `json:"price"` // null for a market order without a worst price
	Fees          decimal.Decimal     `json:"fees"`
	Status        int                 `json:"status"`
	ErrorCode     *int                `json:"errorCode"`
	ClientOrderID *string             `json:"clientOrderId"`
	Passive       bool                `json:"passive"`
	CreateDate    int64               `json:"createDate"`
	Source        int                 `json:"source"`
	UpdateDate    int64               `json:"updateDate"`
}

// OwnOrder is an order of the caller: the listed order with its client
// order id, the account that placed it and the value-weighted average
// price of its fills (null before the first).
type OwnOrder struct {
	Order
	AccountID         int64               `json:"accountId"`
	AverageTradePrice decimal.NullDecimal `json:"averageTradePrice"`
}

// orderColumns are the columns of Order, in the order of orderDest.
const orderColumns = `o.order_id, o.market_id, o.instrument_id, o.side, o.order_type, o.quantity, o.fulfilled,
	o.price, o.fees, o.status, o.error_code, o.passive, o.source, o.create_date, o.update_date`

// orderDest returns the scan destinations of orderColumns; the dates land
// in created and updated.
func orderDest(o *Order, created, updated *time.Time) []any {
	return []any{&o.OrderID, &o.MarketID, &o.InstrumentID, &o.Side, &o.OrderType, &o.Quantity, &o.Fulfilled,
		&o.Price, &o.Fees, &o.Status, &o.ErrorCode, &o.Passive, &o.Source, created, updated}
}

func scanOrder(row pgx.CollectableRow) (Order, error) {
	var o Order
	var created, updated time.Time
	err := row.Scan(orderDest(&o, &created, &updated)...)
	o.CreateDate, o.UpdateDate = created.UnixMilli(), updated.UnixMilli()
	return o, err
}

func scanOwnOrder(row pgx.CollectableRow) (OwnOrder, error) {
	var o OwnOrder
	var created, updated time.Time
	dest := append(orderDest(&o.Order, &created, &updated), &o.ClientOrderID, &o.AccountID, &o.AverageTradePrice)
	err := row.Scan(dest...)
	o.CreateDate, o.UpdateDate = created.UnixMilli(), updated.UnixMilli()
	return o, err
}

// publicOrdersSQL reads one market's orders by orderId, through the
// orders_instrument index (orders_live for onbook=true). Arguments:
// instrument, start, limit.
func publicOrdersSQL(q orderQuery) string {
	return `SELECT ` + orderColumns + ` FROM orders o
		WHERE o.instrument_id = $1 AND o.order_id ` + q.cmp() + ` $2` + q.status.clause() + `
		ORDER BY o.order_id ` + q.dir() + ` LIMIT $3`
}

// ownOrdersSQL reads a user's orders of a family: each account's page
// through orders_account (orders_account_live for onbook=true), then the
// merged page. Arguments: user, start, the family's lowest and highest
// market id, instrument ("" for all), limit.
func ownOrdersSQL(q orderQuery) string {
	return `SELECT ` + orderColumns + `, o.client_order_id, o.account_id, o.average_trade_price
		FROM accounts a CROSS JOIN LATERAL (
			SELECT o.* FROM orders o
			WHERE o.account_id = a.account_id AND o.order_id ` + q.cmp() + ` $2` + q.status.clause() + `
			  AND o.market_id BETWEEN $3 AND $4 AND ($5 = '' OR o.instrument_id = $5)
			ORDER BY o.order_id ` + q.dir() + ` LIMIT $6) o
		WHERE a.user_id = $1
		ORDER BY o.order_id ` + q.dir() + ` LIMIT $6`
}

// publicOrders lists one market's orders.
func (r *Reads) publicOrders(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := parseOrderQuery(c, fam, true)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		rows, _ := r.pool.Query(c, publicOrdersSQL(q), q.instrument, q.start, q.limit)
		orders, err := pgx.CollectRows(rows, scanOrder)
		if err != nil {
			httpx.Fail(c, fmt.Errorf("read orders: %w", err))
			return
		}
		httpx.OK(c, gin.H{"orders": orders})
	}
}

// ownOrders lists the caller's orders of the family across its accounts.
func (r *Reads) ownOrders(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := parseOrderQuery(c, fam, false)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		rows, _ := r.pool.Query(c, ownOrdersSQL(q),
			auth.FromContext(c).User.UserID, q.start, fam.minMarket, fam.maxMarket, q.instrument, q.limit)
		orders, err := pgx.CollectRows(rows, scanOwnOrder)
		if err != nil {
			httpx.Fail(c, fmt.Errorf("read own orders: %w", err))
			return
		}
		httpx.OK(c, gin.H{"orders": orders})
	}
}
