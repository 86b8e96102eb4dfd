package funding

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/httpx"
)

// Deposit is the Deposit resource of the interface. Every stored deposit
// is credited, so status is always 10.
type Deposit struct {
	EventID         int64         `json:"eventId"`
	ChainID         int64         `json:"chainId"`
	BlockIdx        int64         `json:"blockIdx"`
	BlockHash       string        `json:"blockHash"`
	TransactionIdx  int64         `json:"transactionIdx"`
	TransactionHash string        `json:"transactionHash"`
	LogIdx          int           `json:"logIdx"`
	SenderAddress   string        `json:"senderAddress"`
	DepositAddress  string        `json:"depositAddress"`
	Status          int           `json:"status"`
	Deposits        []DepositItem `json:"deposits"`
	Actions         []any         `json:"actions"`
	CreateDate      int64         `json:"createDate"`
}

// DepositItem is one credited amount of a deposit: A is the token's
// contract address (the zero address for ETH), Q the amount in the
// token's smallest unit (wei for ETH) as an exact JSON integer, S the
// tokenId.
type DepositItem struct {
	A string      `json:"a"`
	Q json.Number `json:"q"`
	S int64       `json:"s"`
}

// DepositSuccess is the status of every listed deposit (docs/api.md "Values
// and identifiers").
const DepositSuccess = 10

// deposits lists the caller's deposits, newest block first; startBlockId
// keeps those in that block or below it.
func (r *Reads) deposits(c *gin.Context) {
	n, err := limit(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	start, err := httpx.QueryInt64(c, "startBlockId", false, math.MaxInt64, 0, math.MaxInt64)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	rows, _ := r.pool.Query(c, `
		SELECT d.event_id, d.chain_id, d.block_idx, d.block_hash, d.transaction_idx, d.transaction_hash, d.log_idx,
		       d.sender_address, d.deposit_address, d.status, d.quantity, d.token_id, t.token_address, t.decimals, d.create_date
		FROM deposits d JOIN tokens t USING (token_id)
		WHERE d.user_id = $1 AND d.block_idx <= $2
		ORDER BY d.block_idx DESC, d.event_id DESC LIMIT $3`, userID(c), start, n)
	out, err := pgx.CollectRows(rows, scanDeposit)
	if err != nil {
		httpx.Fail(c, fmt.Errorf("read deposits: %w", err))
		return
	}
	httpx.OK(c, gin.H{"deposits": out})
}

func scanDeposit(row pgx.CollectableRow) (Deposit, error) {
	var d Deposit
	var q decimal.Decimal
	var tokenID int64
	var tokenAddr string
	var decimals int32
	var created time.Time
	if err := row.Scan(&d.EventID, &d.ChainID, &d.BlockIdx, &d.BlockHash, &d.TransactionIdx, &d.TransactionHash, &d.LogIdx,
		&d.SenderAddress, &d.DepositAddress, &d.Status, &q, &tokenID, &tokenAddr, &decimals, &created); err != nil {
		return d, err
	}
	d.Deposits = []DepositItem{{A: tokenAddr, Q: json.Number(q.Shift(decimals).BigInt().String()), S: tokenID}}
	d.Actions = []any{}
	d.CreateDate = created.UnixMilli()
	return d, nil
}
