package funding

import (
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/httpx"
)

// WithdrawRequest is the WithdrawRequest resource of the interface, with
// Remark (why a request failed on chain) added.
type WithdrawRequest struct {
	RequestID  int64           `json:"requestId"`
	UserID     int64           `json:"userId"`
	AccountID  int64           `json:"accountId"`
	TokenID    int64           `json:"tokenId"`
	ChainID    int64           `json:"chainId"`
	Quantity   decimal.Decimal `json:"quantity"`
	Fee        decimal.Decimal `json:"fee"`
	Status     int             `json:"status"`
	TxHash     *string         `json:"txHash"`
	Remark     string          `json:"remark"`
	CreateDate int64           `json:"createDate"`
	UpdateDate int64           `json:"updateDate"`
}

// DailyWithdrawLimit is the DailyWithdrawLimit resource with the
// caller's remaining amount: the limit minus what the caller requested
// over the past 24 hours, failed requests (104) not counted, never below
// zero. Ingress judges new requests by the same sum.
type DailyWithdrawLimit struct {
	TokenID                int64           `json:"tokenId"`
	ChainID                int64           `json:"chainId"`
	TokenAddress           string          `json:"tokenAddress"`
	WithdrawFee            decimal.Decimal `json:"withdrawFee"`
	DailyWithdrawLimit     decimal.Decimal `json:"dailyWithdrawLimit"`
	RemainingWithdrawLimit decimal.Decimal `json:"remainingWithdrawLimit"`
}

const requestColumns = `request_id, user_id, account_id, token_id, chain_id, quantity, fee, status, tx_hash, remark, create_date, update_date`

func scanRequest(row pgx.CollectableRow) (WithdrawRequest, error) {
	var w WithdrawRequest
	var created, updated time.Time
	err := row.Scan(&w.RequestID, &w.UserID, &w.AccountID, &w.TokenID, &w.ChainID, &w.Quantity, &w.Fee,
		&w.Status, &w.TxHash, &w.Remark, &created, &updated)
	w.CreateDate, w.UpdateDate = created.UnixMilli(), updated.UnixMilli()
	return w, err
}

// withdrawStatus answers the caller's requests among requestIds (ids of
// other users' requests are left out, as unknown ones are) and the
// caller's remaining daily limit of every token on the environment's
// chain.
func (r *Reads) withdrawStatus(c *gin.Context) {
	ids, err := parseIDs(c.Query("requestIds"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	uid := userID(c)
	rows, _ := r.pool.Query(c, `SELECT `+requestColumns+` FROM withdraw_requests
		WHERE user_id = $1 AND request_id = ANY($2) ORDER BY request_id`, uid, ids)
	reqs, err := pgx.CollectRows(rows, scanRequest)
	if err != nil {
		httpx.Fail(c, fmt.Errorf("read withdraw requests: %w", err))
		return
	}
	limits, err := r.remainingLimits(c, uid)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{"requests": reqs, "dailyWithdrawLimits": limits})
}

// withdrawLimits answers the caller's remaining daily limit of every token
// on the environment's chain, the same list withdrawStatus carries,
// without naming a request.
func (r *Reads) withdrawLimits(c *gin.Context) {
	limits, err := r.remainingLimits(c, userID(c))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{"dailyWithdrawLimits": limits})
}

// remainingLimits reads each token's daily limit less what uid requested
// over the past 24 hours (failed requests, status 104, not counted).
func (r *Reads) remainingLimits(c *gin.Context, uid int64) ([]DailyWithdrawLimit, error) {
	rows, _ := r.pool.Query(c, `
		SELECT l.token_id, l.chain_id, t.token_address, l.withdraw_fee, l.daily_limit,
		       GREATEST(l.daily_limit - coalesce((
		           SELECT sum(w.quantity) FROM withdraw_requests w
		           WHERE w.user_id = $1 AND w.token_id = l.token_id AND w.chain_id = l.chain_id
		             AND w.status <> 104 AND w.create_date > now() - interval '24 hours'), 0), 0)
		FROM withdraw_limits l JOIN tokens t USING (token_id)
		WHERE l.chain_id = $2 ORDER BY l.token_id`, uid, r.chainID)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (DailyWithdrawLimit, error) {
		var l DailyWithdrawLimit
		err := row.Scan(&l.TokenID, &l.ChainID, &l.TokenAddress, &l.WithdrawFee, &l.DailyWithdrawLimit, &l.RemainingWithdrawLimit)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read withdraw limits: %w", err)
	}
	return out, nil
}

// parseIDs reads the comma-separated requestIds: 1 to 100 positive
// integers.
func parseIDs(raw string) ([]int64, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, httpx.Invalid("query parameter requestIds is required")
	}
	parts := strings.Split(raw, ",")
	if len(parts) > MaxRequestIDs {
		return nil, httpx.Invalid("query parameter requestIds holds %d ids, at most %d are allowed", len(parts), MaxRequestIDs)
	}
	ids := make([]int64, 0, len(parts))
	for _, p := range parts {
		id, err := httpx.ParseInt64(strings.TrimSpace(p))
		if err != nil || id <= 0 {
			return nil, httpx.Invalid("query parameter requestIds must be comma-separated positive integers, got %q", short(p))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func short(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// withdraws lists the caller's requests, newest first; startId keeps
// those with that id or below.
func (r *Reads) withdraws(c *gin.Context) {
	n, err := limit(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	start, err := startID(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	rows, _ := r.pool.Query(c, `SELECT `+requestColumns+` FROM withdraw_requests
		WHERE user_id = $1 AND request_id <= $2 ORDER BY request_id DESC LIMIT $3`, userID(c), start, n)
	reqs, err := pgx.CollectRows(rows, scanRequest)
	if err != nil {
		httpx.Fail(c, fmt.Errorf("read withdraw requests: %w", err))
		return
	}
	httpx.OK(c, gin.H{"requests": reqs})
}
