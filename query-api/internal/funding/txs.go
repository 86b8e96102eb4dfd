package funding

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/users"
)

// Transaction is the AccountTransaction resource: one posting of the
// ledger on a user account; TrxID is the posting id.
type Transaction struct {
	TrxID      int64           `json:"trxId"`
	AccountID  int64           `json:"accountId"`
	TokenID    int64           `json:"tokenId"`
	Type       int             `json:"type"`
	Quantity   decimal.Decimal `json:"quantity"`
	Balance    decimal.Decimal `json:"balance"`
	CreateDate int64           `json:"createDate"`
}

// txQuery is a parsed transaction list request.
type txQuery struct {
	types []int64
	start int64
	limit int
}

func parseTxQuery(c *gin.Context) (txQuery, error) {
	var q txQuery
	var err error
	if q.limit, err = limit(c); err != nil {
		return q, err
	}
	if q.start, err = startID(c); err != nil {
		return q, err
	}
	if raw := c.Query("type"); strings.TrimSpace(raw) != "" {
		for _, p := range strings.Split(raw, ",") {
			t, err := httpx.ParseInt64(strings.TrimSpace(p))
			if err != nil || t <= 0 || t > math.MaxInt16 {
				return q, httpx.Invalid("query parameter type must be comma-separated transaction types, got %q", short(p))
			}
			q.types = append(q.types, t)
		}
	}
	return q, nil
}

// accountTxs lists one of the caller's accounts' transactions, newest
// first. An account that is not the caller's answers 403 whether it
// exists or not.
func (r *Reads) accountTxs(c *gin.Context) {
	id, err := httpx.ParseInt64(c.Param("accountId"))
	if err != nil || id <= 0 {
		httpx.Fail(c, httpx.Invalid("path parameter accountId must be a positive integer, got %q", short(c.Param("accountId"))))
		return
	}
	q, err := parseTxQuery(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	uid := userID(c)
	if _, err := users.AccountOf(c, r.pool, uid, id); errors.Is(err, users.ErrNotFound) {
		httpx.Fail(c, httpx.Forbidden("account is not yours"))
		return
	} else if err != nil {
		httpx.Fail(c, err)
		return
	}
	r.listTxs(c, uid, id, q)
}

// userTxs lists the transactions of all the caller's accounts.
func (r *Reads) userTxs(c *gin.Context) {
	q, err := parseTxQuery(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	r.listTxs(c, userID(c), 0, q)
}

// listTxs reads the postings of the user's accounts (of account only,
// when not 0) by descending trxId.
func (r *Reads) listTxs(c *gin.Context, uid, account int64, q txQuery) {
	rows, _ := r.pool.Query(c, `
		SELECT p.posting_id, p.account_id, p.token_id, p.type, p.amount, p.balance, p.created
		FROM postings p JOIN accounts a USING (account_id)
		WHERE a.user_id = $1 AND ($2 = 0 OR p.account_id = $2) AND p.posting_id <= $3
		  AND (coalesce(cardinality($4::smallint[]), 0) = 0 OR p.type = ANY($4))
		ORDER BY p.posting_id DESC LIMIT $5`, uid, account, q.start, q.types, q.limit)
	txs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Transaction, error) {
		var t Transaction
		var at time.Time
		err := row.Scan(&t.TrxID, &t.AccountID, &t.TokenID, &t.Type, &t.Quantity, &t.Balance, &at)
		t.CreateDate = at.UnixMilli()
		return t, err
	})
	if err != nil {
		httpx.Fail(c, fmt.Errorf("read account transactions: %w", err))
		return
	}
	httpx.OK(c, gin.H{"txs": txs})
}
