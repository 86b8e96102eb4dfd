package tradingreads

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
)

// Trade is the WholeBlockTrade resource of the interface (docs/api.md
// "Orders, trades and positions"; Side is the
// taker's side, the trade's direction), and the InclusionPreconfTrade of
// the same shape: quantities in gas units and no PreconfQuantity.
type Trade struct {
	InstrumentID string          `json:"instrumentId"`
	TrxID        int64           `json:"trxId"`
	Side         bool            `json:"side"`
	Price        decimal.Decimal `json:"price"`
	Quantity     decimal.Decimal `json:"quantity"`
	// PreconfQuantity is the preconf gas sold with the block; whole-block
	// trades only.
	PreconfQuantity *decimal.Decimal `json:"preconfQuantity,omitempty"`
	Date            int64            `json:"date"`
}

// OwnTrade is a trade of the caller as the caller saw it: Side is the
// caller's side (true when it bought), Fee what the caller paid, OrderID
// the caller's order, Taker whether that order took liquidity.
type OwnTrade struct {
	Trade
	AccountID int64           `json:"accountId"`
	OrderID   int64           `json:"orderId"`
	Taker     bool            `json:"taker"`
	Fee       decimal.Decimal `json:"fee"`
}

// tradeColumns are the columns of Trade, in the order of tradeDest.
const tradeColumns = `t.instrument_id, t.trade_id, t.side, t.price, t.quantity, t.preconf_quantity, t.executed_at`

// tradeDest returns the scan destinations of tradeColumns.
func tradeDest(t *Trade, preconf *decimal.NullDecimal, executed *time.Time) []any {
	return []any{&t.InstrumentID, &t.TrxID, &t.Side, &t.Price, &t.Quantity, preconf, executed}
}

// finish sets what tradeDest scanned apart: the date, and the preconf
// quantity of a whole-block trade (zero when none moved with the block).
func (t *Trade) finish(fam family, preconf decimal.NullDecimal, executed time.Time) {
	t.Date = executed.UnixMilli()
	if fam.withBlocks {
		q := preconf.Decimal // zero when NULL
		t.PreconfQuantity = &q
	}
}

// publicTrades lists one market's trades, newest first, through the
// trades_instrument index.
func (r *Reads) publicTrades(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := parseTradeQuery(c, fam, true)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		rows, _ := r.pool.Query(c, `SELECT `+tradeColumns+` FROM trades t
			WHERE t.instrument_id = $1 AND t.trade_id <= $2 ORDER BY t.trade_id DESC LIMIT $3`,
			q.instrument, q.start, q.limit)
		trades, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Trade, error) {
			var t Trade
			var preconf decimal.NullDecimal
			var executed time.Time
			err := row.Scan(tradeDest(&t, &preconf, &executed)...)
			t.finish(fam, preconf, executed)
			return t, err
		})
		if err != nil {
			httpx.Fail(c, fmt.Errorf("read trades: %w", err))
			return
		}
		httpx.OK(c, gin.H{"trades": trades})
	}
}

// ownTradeColumns are the columns of a trade its parties see.
const ownTradeColumns = tradeColumns + `, t.taker_order_id, t.maker_order_id, t.buyer_fee, t.seller_fee`

// ownTradesSQL reads the caller's trades of the family, newest first:
// for each of the caller's accounts the page of trades it bought in
// (trades_buyer) and the page it sold in (trades_seller), merged. A trade
// between two of the caller's accounts is listed once, as a buy.
const ownTradesSQL = `SELECT ` + tradeColumns + `, t.account_id, t.bought, t.taker_order_id, t.maker_order_id, t.buyer_fee, t.seller_fee
	FROM accounts a CROSS JOIN LATERAL (
		(SELECT ` + ownTradeColumns + `, a.account_id, true AS bought FROM trades t
		 WHERE t.buyer_account_id = a.account_id AND t.trade_id <= $2
		   AND t.market_id BETWEEN $3 AND $4 AND ($5 = '' OR t.instrument_id = $5)
		 ORDER BY t.trade_id DESC LIMIT $6)
		UNION ALL
		(SELECT ` + ownTradeColumns + `, a.account_id, false FROM trades t
		 WHERE t.seller_account_id = a.account_id AND t.trade_id <= $2
		   AND t.market_id BETWEEN $3 AND $4 AND ($5 = '' OR t.instrument_id = $5)
		   AND t.buyer_account_id NOT IN (SELECT account_id FROM accounts WHERE user_id = $1)
		 ORDER BY t.trade_id DESC LIMIT $6)) t
	WHERE a.user_id = $1
	ORDER BY t.trade_id DESC LIMIT $6`

// ownTrades lists the caller's trades of the family across its accounts.
func (r *Reads) ownTrades(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := parseTradeQuery(c, fam, false)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		rows, _ := r.pool.Query(c, ownTradesSQL,
			auth.FromContext(c).User.UserID, q.start, fam.minMarket, fam.maxMarket, q.instrument, q.limit)
		trades, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OwnTrade, error) {
			return scanOwnTrade(row, fam)
		})
		if err != nil {
			httpx.Fail(c, fmt.Errorf("read own trades: %w", err))
			return
		}
		httpx.OK(c, gin.H{"trades": trades})
	}
}

// scanOwnTrade turns a row of ownTradesSQL into the caller's view: the
// caller's order is the taker's when its side is the taker's side.
func scanOwnTrade(row pgx.CollectableRow, fam family) (OwnTrade, error) {
	var t OwnTrade
	var preconf decimal.NullDecimal
	var executed time.Time
	var bought bool
	var takerOrder, makerOrder int64
	var buyerFee, sellerFee decimal.Decimal
	dest := append(tradeDest(&t.Trade, &preconf, &executed), &t.AccountID, &bought, &takerOrder, &makerOrder, &buyerFee, &sellerFee)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.finish(fam, preconf, executed)
	t.Taker = bought == t.Side
	t.OrderID, t.Fee = makerOrder, sellerFee
	if t.Taker {
		t.OrderID = takerOrder
	}
	if bought {
		t.Fee = buyerFee
	}
	t.Side = bought
	return t, nil
}
