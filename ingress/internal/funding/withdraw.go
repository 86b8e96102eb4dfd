package funding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/users"
	"blockspace.exchange/topics"
)

// Withdraw request statuses of rejected items (docs/api.md "Values and
// identifiers").
const (
	StatusUnsupportedChain  = 101
	StatusInsufficientFunds = 102
	StatusDailyLimit        = 103
	// StatusNotProcessed marks an item left unjudged because Postgres
	// failed after earlier items of the request were accepted.
	StatusNotProcessed = 105
)

// withdrawItem is one item of the withdraw body.
type withdrawItem struct {
	AccountID jsonText `json:"accountId"`
	ChainID   jsonText `json:"chainId"`
	TokenID   jsonText `json:"tokenId"`
	Quantity  jsonText `json:"quantity"`
}

// jsonText is a field's value as text: a JSON string's content, or any
// other JSON value as written. The field's own check then says what is
// wrong with it ("item 0: quantity must be a decimal number, got …")
// rather than the decoder.
type jsonText string

// UnmarshalJSON keeps the value as text; null is empty.
func (v *jsonText) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*v = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = jsonText(s)
	default:
		*v = jsonText(b)
	}
	return nil
}

// FailedRequest is the FailedWithdrawRequest resource.
type FailedRequest struct {
	AccountID int64           `json:"accountId"`
	TokenID   int64           `json:"tokenId"`
	ChainID   int64           `json:"chainId"`
	Quantity  decimal.Decimal `json:"quantity"`
	Fee       decimal.Decimal `json:"fee"`
	Status    int             `json:"status"`
	Remark    string          `json:"remark"`
}

type withdrawal struct {
	accountID, chainID, tokenID int64
	quantity                    decimal.Decimal
}

func (s *Service) withdraw(c *gin.Context) {
	items, err := s.parseWithdraw(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	userID := auth.FromContext(c).User.UserID
	if err := s.checkWithdrawAccounts(c, userID, items); err != nil {
		httpx.Fail(c, err)
		return
	}
	var addr string
	if err := s.pool.QueryRow(c, `SELECT address FROM users WHERE user_id = $1`, userID).Scan(&addr); err != nil {
		httpx.Fail(c, fmt.Errorf("read user %d: %w", userID, err))
		return
	}
	submitted, failed := []int64{}, []FailedRequest{}
	var out []outbox.Pending
	for i, w := range items {
		id, fail, p, err := s.withdrawOne(c, userID, addr, w)
		if err != nil && len(submitted) == 0 {
			httpx.Fail(c, err)
			return
		}
		if err != nil {
			// Items accepted so far are stored and reserved: the answer
			// must list them, or a retry would withdraw them twice. The
			// rest were not processed and may be sent again.
			httpx.Partial(c, err)
			for _, rest := range items[i:] {
				failed = append(failed, notProcessed(rest))
			}
			break
		}
		if fail != nil {
			failed = append(failed, *fail)
			continue
		}
		submitted, out = append(submitted, id), append(out, p)
	}
	s.outbox.Publish(c, out)
	httpx.OK(c, gin.H{"submittedRequestIds": submitted, "failedRequests": failed})
}

// notProcessed is the failed item of a withdrawal that was not judged
// because a dependency failed during the request.
func notProcessed(w withdrawal) FailedRequest {
	return FailedRequest{AccountID: w.accountID, TokenID: w.tokenID, ChainID: w.chainID, Quantity: w.quantity, Fee: decimal.Zero,
		Status: StatusNotProcessed, Remark: "Not processed: service unavailable, nothing reserved; submit this item again"}
}

// parseWithdraw reads the body, then checks each item's token.
func (s *Service) parseWithdraw(c *gin.Context) ([]withdrawal, error) {
	body, err := httpx.ReadBody(c)
	if err != nil {
		return nil, err
	}
	raw, err := decodeWithdraw(body)
	if err != nil {
		return nil, err
	}
	items, err := withdrawItems(raw, s.cfg.MaxWithdrawItems)
	if err != nil {
		return nil, err
	}
	for i, w := range items {
		known, err := s.fitsToken(c, fmt.Sprintf("item %d: quantity", i), string(raw[i].Quantity), w.quantity, w.tokenID)
		if err != nil {
			return nil, err
		}
		if !known {
			return nil, httpx.Refused(CodeWithdrawBadToken, "error.withdraw.invalidToken", "item %d: tokenId %d is not a known token", i, w.tokenID)
		}
	}
	return items, nil
}

// decodeWithdraw reads the body as a JSON array of objects. A body or an
// item of another JSON kind is named as such, in the interface's words.
func decodeWithdraw(body []byte) ([]withdrawItem, error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '[' && t[0] != 'n' && json.Valid(body) {
		return nil, httpx.Invalid("body must be a JSON array of withdraw requests, got %s", short(string(t)))
	}
	var elems []json.RawMessage
	if err := httpx.DecodeJSONBytes(body, &elems); err != nil {
		return nil, err
	}
	raw := make([]withdrawItem, len(elems))
	for i, e := range elems {
		if e[0] != '{' {
			return nil, httpx.Invalid("item %d must be a JSON object, got %s", i, short(string(e)))
		}
		if err := json.Unmarshal(e, &raw[i]); err != nil {
			return nil, httpx.Invalid("item %d: %v", i, err)
		}
	}
	return raw, nil
}

// withdrawItems checks the decoded body: 1 to max items, each with
// positive integer ids (decimal, or 0x-hexadecimal as chain ids are
// written) and a positive decimal quantity. It reads nothing from the
// database; the tokens are checked afterwards.
func withdrawItems(raw []withdrawItem, max int) ([]withdrawal, error) {
	if len(raw) == 0 || len(raw) > max {
		return nil, httpx.Invalid("body must be a JSON array of 1 to %d withdraw requests, got %d", max, len(raw))
	}
	out := make([]withdrawal, len(raw))
	for i, it := range raw {
		var err error
		field := func(name string, text jsonText) int64 {
			if err != nil {
				return 0
			}
			v, e := httpx.ParseInt64(string(text))
			if e != nil || v <= 0 {
				err = httpx.Invalid("item %d: %s must be a positive integer, got %q", i, name, short(string(text)))
			}
			return v
		}
		out[i].accountID = field("accountId", it.AccountID)
		out[i].chainID = field("chainId", it.ChainID)
		out[i].tokenID = field("tokenId", it.TokenID)
		if err != nil {
			return nil, err
		}
		if out[i].quantity, err = parseQuantity(fmt.Sprintf("item %d: quantity", i), string(it.Quantity)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkWithdrawAccounts refuses the request when an item names an account
// that is not the caller's (403, as for every account) or is not a
// current account: withdrawals leave from the current account.
func (s *Service) checkWithdrawAccounts(ctx context.Context, userID int64, items []withdrawal) error {
	for i, w := range items {
		typ, ok, err := accountType(ctx, s.pool, userID, w.accountID)
		if err != nil {
			return err
		}
		if !ok {
			return httpx.Forbidden("account is not yours")
		}
		if typ != users.AccountCurrent {
			return httpx.Refused(CodeWithdrawBadAccount, "error.withdraw.invalidAccount",
				"item %d: account %d is not a current account; withdrawals leave from the current account", i, w.accountID)
		}
	}
	return nil
}

var errRejected = errors.New("withdraw item rejected")

// withdrawOne judges one item on its own: chain, limit and funds. An
// accepted item is reserved, stored and written to the outbox in one
// transaction.
func (s *Service) withdrawOne(ctx context.Context, userID int64, addr string, w withdrawal) (int64, *FailedRequest, outbox.Pending, error) {
	fail := &FailedRequest{AccountID: w.accountID, TokenID: w.tokenID, ChainID: w.chainID, Quantity: w.quantity, Fee: decimal.Zero}
	reject := func(status int, remark string) (int64, *FailedRequest, outbox.Pending, error) {
		fail.Status, fail.Remark = status, remark
		return 0, fail, outbox.Pending{}, nil
	}
	var fee, limit decimal.Decimal
	err := s.pool.QueryRow(ctx, `SELECT withdraw_fee, daily_limit FROM withdraw_limits WHERE token_id = $1 AND chain_id = $2`,
		w.tokenID, w.chainID).Scan(&fee, &limit)
	if !slices.Contains(s.cfg.WithdrawChains, w.chainID) || errors.Is(err, pgx.ErrNoRows) {
		return reject(StatusUnsupportedChain, "Unsupported Chain ID")
	}
	if err != nil {
		return 0, nil, outbox.Pending{}, fmt.Errorf("read withdraw limits: %w", err)
	}
	fail.Fee = fee
	var id int64
	var out outbox.Pending
	var status int
	var remark string
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The reservation locks the balance row first, so concurrent
		// withdrawals of this account see each other in the limit sum.
		ok, err := reserve(ctx, tx, w.accountID, w.tokenID, w.quantity.Add(fee))
		if err != nil {
			return err
		}
		if !ok {
			status, remark = StatusInsufficientFunds, "Insufficient funds"
			return errRejected
		}
		var used decimal.Decimal
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(quantity), 0) FROM withdraw_requests
			WHERE user_id = $1 AND token_id = $2 AND chain_id = $3 AND status <> 104
			  AND create_date > now() - interval '24 hours'`, userID, w.tokenID, w.chainID).Scan(&used); err != nil {
			return fmt.Errorf("read withdrawn amount: %w", err)
		}
		if used.Add(w.quantity).GreaterThan(limit) {
			status, remark = StatusDailyLimit, fmt.Sprintf("Daily withdraw limit exceeded: %s of %s left", decimal.Max(limit.Sub(used), decimal.Zero), limit)
			return errRejected
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address)
			VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7) RETURNING request_id`,
			userID, w.accountID, w.tokenID, w.chainID, w.quantity.String(), fee.String(), addr).Scan(&id); err != nil {
			return fmt.Errorf("insert withdraw request: %w", err)
		}
		e, err := topics.FundingEnvelope(topics.TypeLedgerWithdraw, fmt.Sprintf("withdraw-%d", id), s.now(), topics.LedgerWithdraw{
			RequestID: id, UserID: userID, AccountID: w.accountID, TokenID: w.tokenID, ChainID: w.chainID,
			Quantity: w.quantity.String(), Fee: fee.String(), ToAddress: addr})
		if err != nil {
			return err
		}
		out, err = enqueue(ctx, tx, topics.UserKey(userID), e)
		return err
	})
	if errors.Is(err, errRejected) {
		return reject(status, remark)
	}
	if err != nil {
		return 0, nil, outbox.Pending{}, err
	}
	return id, nil, out, nil
}
