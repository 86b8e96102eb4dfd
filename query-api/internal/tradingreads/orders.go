package tradingreads

import (
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
)

// orderColumns are the columns of the order resource (platform/api's
// Order), in the order of orderDest.
const orderColumns = `o.order_id, o.market_id, o.instrument_id, o.side, o.order_type, o.quantity, o.fulfilled,
	o.price, o.fees, o.status, o.error_code, o.passive, o.source, o.create_date, o.update_date`

// orderDest returns the scan destinations of orderColumns.
func orderDest(o *api.OrderRow) []any {
	return []any{&o.OrderID, &o.MarketID, &o.InstrumentID, &o.Side, &o.OrderType, &o.Quantity, &o.Fulfilled,
		&o.Price, &o.Fees, &o.Status, &o.ErrorCode, &o.Passive, &o.Source, &o.Created, &o.Updated}
}

func scanOrder(row pgx.CollectableRow) (api.Order, error) {
	var o api.OrderRow
	err := row.Scan(orderDest(&o)...)
	return o.Order(), err
}

func scanOwnOrder(row pgx.CollectableRow) (api.OwnOrder, error) {
	var o api.OrderRow
	err := row.Scan(append(orderDest(&o), &o.ClientOrderID, &o.AccountID, &o.AverageTradePrice)...)
	return o.Own(), err
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
