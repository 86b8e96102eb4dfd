// Package funding is the money side of ingress: transfers between a
// user's own accounts and withdrawal requests. Each reserves the funds in
// Postgres (locked += x only where available ≥ x) in the same transaction
// as an outbox row holding the command (docs/architecture.md "Reserve at
// the edge"), then publishes the
// command; the outbox relay republishes what Kafka did not acknowledge.
package funding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/users"
	"blockspace.exchange/topics"
)

// Application codes of funding (docs/codes.md "Funding codes"); a
// transfer short of funds answers topics.CodeInsufficientFunds.
const (
	CodeWithdrawBadAccount    = 10010
	CodeWithdrawBadToken      = 10011
	CodeWithdrawNoFunds       = 10012
	CodeWithdrawLimitExceeded = 10013
	CodeUnsupportedChain      = 10014
)

// Config configures transfers and withdrawals.
type Config struct {
	// WithdrawChains are the chain ids withdrawals may go to: the
	// environment's chain.
	WithdrawChains []int64
	// MaxWithdrawItems bounds the items of one withdraw request (20).
	MaxWithdrawItems int
}

// Service serves the funding mutations.
type Service struct {
	cfg    Config
	pool   *pgxpool.Pool
	outbox *outbox.Outbox
	now    func() time.Time
}

// New returns the service.
func New(cfg Config, pool *pgxpool.Pool, out *outbox.Outbox) *Service {
	if cfg.MaxWithdrawItems <= 0 {
		cfg.MaxWithdrawItems = 20
	}
	return &Service{cfg: cfg, pool: pool, outbox: out, now: time.Now}
}

// Register mounts the routes. needs answers 503 while Postgres or Kafka is
// down, before anything is reserved.
func (s *Service) Register(r gin.IRouter, bearer gin.HandlerFunc, needs ...gin.HandlerFunc) {
	g := r.Group("/api/v1/user", append(needs, bearer)...)
	g.POST("/account/transfer/token", s.transfer)
	g.POST("/funding/withdraw", httpx.RequireJSON(), s.withdraw)
}

func formParams(c *gin.Context) (url.Values, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, httpx.Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return login.Params(c.Request.URL.RawQuery, c.GetHeader("Content-Type"), body)
}

func positiveID(v url.Values, name string) (int64, error) {
	raw := v.Get(name)
	if raw == "" {
		return 0, httpx.Invalid("parameter %s is required", name)
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, httpx.Invalid("parameter %s must be a positive integer, got %q", name, short(raw))
	}
	return id, nil
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// quantity parses a positive amount with at most the token's decimals;
// known is false when the token does not exist.
func (s *Service) quantity(ctx context.Context, name, raw string, tokenID int64) (q decimal.Decimal, known bool, err error) {
	if q, err = parseQuantity(name, raw); err != nil {
		return decimal.Decimal{}, false, err
	}
	if known, err = s.fitsToken(ctx, name, raw, q, tokenID); err != nil || !known {
		return decimal.Decimal{}, known, err
	}
	return q, true, nil
}

// parseQuantity reads a positive decimal amount of at most 80 characters.
func parseQuantity(name, raw string) (decimal.Decimal, error) {
	if raw == "" {
		return decimal.Decimal{}, httpx.Invalid("%s is required", name)
	}
	q, err := decimal.NewFromString(raw)
	if err != nil || len(raw) > 80 {
		return decimal.Decimal{}, httpx.Invalid("%s must be a decimal number, got %q", name, short(raw))
	}
	if !q.IsPositive() {
		return decimal.Decimal{}, httpx.Invalid("%s must be positive, got %s", name, q)
	}
	return q, nil
}

// fitsToken checks that q (read from raw) has at most the decimals of
// token tokenID; known is false when there is no such token.
func (s *Service) fitsToken(ctx context.Context, name, raw string, q decimal.Decimal, tokenID int64) (known bool, err error) {
	// tokens.token_id is a Postgres integer: an id past its range names
	// no token, and as a query argument it would fail to encode.
	if tokenID > math.MaxInt32 {
		return false, nil
	}
	var decimals int32
	err = s.pool.QueryRow(ctx, `SELECT decimals FROM tokens WHERE token_id = $1`, tokenID).Scan(&decimals)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read token %d: %w", tokenID, err)
	}
	if !q.Equal(q.Truncate(decimals)) {
		return true, httpx.Invalid("%s %s has more than the %d decimals of token %d", name, raw, decimals, tokenID)
	}
	return true, nil
}

// reserve locks amount in an account's balance if it is available. It
// reports false when the available quantity is short.
func reserve(ctx context.Context, tx pgx.Tx, accountID, tokenID int64, amount decimal.Decimal) (bool, error) {
	tag, err := tx.Exec(ctx, `
		UPDATE account_balances SET locked = locked + $3::numeric
		WHERE account_id = $1 AND token_id = $2 AND quantity - locked >= $3::numeric`,
		accountID, tokenID, amount.String())
	if err != nil {
		return false, fmt.Errorf("reserve funds: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Service) transfer(c *gin.Context) {
	if err := s.doTransfer(c); err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{})
}

func (s *Service) doTransfer(c *gin.Context) error {
	v, err := formParams(c)
	if err != nil {
		return err
	}
	from, err := positiveID(v, "fromAccountId")
	if err != nil {
		return err
	}
	to, err := positiveID(v, "toAccountId")
	if err != nil {
		return err
	}
	token, err := positiveID(v, "tokenId")
	if err != nil {
		return err
	}
	if from == to {
		return httpx.Invalid("fromAccountId and toAccountId must differ")
	}
	userID := auth.FromContext(c).User.UserID
	var owned int
	if err := s.pool.QueryRow(c, `SELECT count(*) FROM accounts WHERE account_id = ANY($1) AND user_id = $2`,
		[]int64{from, to}, userID).Scan(&owned); err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	if owned != 2 {
		return httpx.Forbidden("account is not yours")
	}
	q, known, err := s.quantity(c, "quantity", v.Get("quantity"), token)
	if err != nil {
		return err
	}
	if !known {
		return httpx.Invalid("tokenId %d is not a known token", token)
	}
	var out outbox.Pending
	err = pgx.BeginFunc(c, s.pool, func(tx pgx.Tx) error {
		ok, err := reserve(c, tx, from, token, q)
		if err != nil {
			return err
		}
		if !ok {
			return httpx.Refused(topics.CodeInsufficientFunds, "error.account.insufficientFund",
				"available quantity of token %d in account %d is below %s", token, from, q)
		}
		var id int64
		if err := tx.QueryRow(c, `SELECT nextval('transfer_ids')`).Scan(&id); err != nil {
			return fmt.Errorf("next transfer id: %w", err)
		}
		e, err := topics.FundingEnvelope(topics.TypeLedgerTransfer, "transfer-"+strconv.FormatInt(id, 10), s.now(),
			topics.LedgerTransfer{TransferID: id, UserID: userID, FromAccountID: from, ToAccountID: to, TokenID: token, Quantity: q.String()})
		if err != nil {
			return err
		}
		out, err = enqueue(c, tx, topics.UserKey(userID), e)
		return err
	})
	if err != nil {
		return err
	}
	s.outbox.Publish(c, []outbox.Pending{out})
	return nil
}

// enqueue writes a ledger command to the outbox in tx.
func enqueue(ctx context.Context, tx pgx.Tx, key []byte, e topics.Envelope) (outbox.Pending, error) {
	r, err := kafka.NewRecord(topics.LedgerCommands, key, e)
	if err != nil {
		return outbox.Pending{}, err
	}
	return outbox.Enqueue(ctx, tx, r)
}

// accountType reports the type of an account if userID owns it.
func accountType(ctx context.Context, q users.Querier, userID, accountID int64) (int, bool, error) {
	var typ int
	err := q.QueryRow(ctx, `SELECT type FROM accounts WHERE account_id = $1 AND user_id = $2`, accountID, userID).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read account %d: %w", accountID, err)
	}
	return typ, true, nil
}
