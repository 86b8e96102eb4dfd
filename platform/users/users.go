// Package users reads the User, Account and TokenBalance resources of the
// interface from Postgres. Ingress answers login and profile updates with
// a user, query-api serves the user's own reads; both use these queries
// so that the resource has one shape.
package users

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// Querier is what the reads need: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Account types.
const (
	AccountCurrent = 1 // current account
	AccountPreconf = 2 // preconf trading account
)

// ErrNotFound is returned for a user or account that does not exist.
var ErrNotFound = errors.New("not found")

// User is the User resource.
type User struct {
	UserID            int64           `json:"userId"`
	Address           string          `json:"address"`
	Status            int             `json:"status"`
	UserType          int             `json:"userType"`
	UserClass         int             `json:"userClass"`
	DisplayName       string          `json:"displayName"`
	PayoutAddress     *string         `json:"payoutAddress"`
	CollateralPerSlot decimal.Decimal `json:"collateralPerSlot"`
	OnchainPayout     bool            `json:"onchainPayout"`
	Accounts          []Account       `json:"accounts"`
}

// Account is the Account resource. Tokens is set by the account reads,
// CashTokenIDs by the refresh answer only.
type Account struct {
	AccountID    int64          `json:"accountId"`
	UserID       int64          `json:"userId"`
	Type         int            `json:"type"`
	Name         string         `json:"name"`
	Status       int            `json:"status"`
	UpdateDate   int64          `json:"updateDate"` // epoch milliseconds
	CashTokenIDs []int64        `json:"cashTokenIds,omitempty"`
	Tokens       []TokenBalance `json:"tokens,omitempty"`
}

// TokenBalance is the TokenBalance resource.
type TokenBalance struct {
	AccountID              int64           `json:"accountId"`
	TokenID                int64           `json:"tokenId"`
	Code                   string          `json:"code"`
	Quantity               decimal.Decimal `json:"quantity"`
	LockedQuantity         decimal.Decimal `json:"lockedQuantity"`
	AvailableQuantity      decimal.Decimal `json:"availableQuantity"`
	TokenType              int             `json:"tokenType"`
	ValueType              int             `json:"valueType"`
	TokenValuationProtocol int             `json:"tokenValuationProtocol"`
}

// Get reads a user and its accounts (without balances) in one query.
func Get(ctx context.Context, q Querier, userID int64) (User, error) {
	rows, err := q.Query(ctx, `
		SELECT u.user_id, u.address, u.status, u.user_type, u.user_class, u.display_name,
		       u.payout_address, u.collateral_per_slot, u.onchain_payout,
		       a.account_id, a.type, a.name, a.status, a.update_date
		FROM users u LEFT JOIN accounts a ON a.user_id = u.user_id
		WHERE u.user_id = $1
		ORDER BY a.account_id`, userID)
	if err != nil {
		return User{}, fmt.Errorf("read user %d: %w", userID, err)
	}
	defer rows.Close()
	var u User
	found := false
	for rows.Next() {
		var (
			accID, accType, accStatus *int64
			accName                   *string
			accDate                   *time.Time
		)
		if err := rows.Scan(&u.UserID, &u.Address, &u.Status, &u.UserType, &u.UserClass, &u.DisplayName,
			&u.PayoutAddress, &u.CollateralPerSlot, &u.OnchainPayout,
			&accID, &accType, &accName, &accStatus, &accDate); err != nil {
			return User{}, fmt.Errorf("read user %d: %w", userID, err)
		}
		found = true
		if accID != nil {
			u.Accounts = append(u.Accounts, Account{AccountID: *accID, UserID: u.UserID, Type: int(*accType),
				Name: *accName, Status: int(*accStatus), UpdateDate: accDate.UnixMilli()})
		}
	}
	if err := rows.Err(); err != nil {
		return User{}, fmt.Errorf("read user %d: %w", userID, err)
	}
	if !found {
		return User{}, ErrNotFound
	}
	if u.Accounts == nil {
		u.Accounts = []Account{}
	}
	return u, nil
}

const accountsWithTokens = `
	SELECT a.account_id, a.user_id, a.type, a.name, a.status, a.update_date,
	       b.token_id, t.code, b.quantity, b.locked, t.token_type, t.value_type, t.token_valuation_protocol
	FROM accounts a
	LEFT JOIN account_balances b ON b.account_id = a.account_id
	LEFT JOIN tokens t ON t.token_id = b.token_id
	`

// Accounts reads the accounts of a user with their token balances.
func Accounts(ctx context.Context, q Querier, userID int64) ([]Account, error) {
	out, err := scanAccounts(q.Query(ctx, accountsWithTokens+`WHERE a.user_id = $1 ORDER BY a.account_id, b.token_id`, userID))
	if err != nil {
		return nil, fmt.Errorf("read accounts of user %d: %w", userID, err)
	}
	return out, nil
}

// AccountOf reads one account with its balances if userID owns it; an
// account of another user is ErrNotFound too, so ids cannot be probed.
func AccountOf(ctx context.Context, q Querier, userID, accountID int64) (Account, error) {
	out, err := scanAccounts(q.Query(ctx, accountsWithTokens+`WHERE a.account_id = $1 AND a.user_id = $2 ORDER BY b.token_id`, accountID, userID))
	if err != nil {
		return Account{}, fmt.Errorf("read account %d: %w", accountID, err)
	}
	if len(out) == 0 {
		return Account{}, ErrNotFound
	}
	return out[0], nil
}

func scanAccounts(rows pgx.Rows, err error) ([]Account, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Account{}
	for rows.Next() {
		var (
			a                      Account
			userID                 *int64
			date                   time.Time
			tokenID                *int64
			code                   *string
			qty, locked            decimal.NullDecimal
			tokType, valType, prot *int
		)
		if err := rows.Scan(&a.AccountID, &userID, &a.Type, &a.Name, &a.Status, &date,
			&tokenID, &code, &qty, &locked, &tokType, &valType, &prot); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].AccountID != a.AccountID {
			if userID != nil {
				a.UserID = *userID
			}
			a.UpdateDate = date.UnixMilli()
			a.Tokens = []TokenBalance{}
			out = append(out, a)
		}
		if tokenID != nil {
			cur := &out[len(out)-1]
			cur.Tokens = append(cur.Tokens, TokenBalance{
				AccountID: a.AccountID, TokenID: *tokenID, Code: *code,
				Quantity: qty.Decimal, LockedQuantity: locked.Decimal, AvailableQuantity: qty.Decimal.Sub(locked.Decimal),
				TokenType: *tokType, ValueType: *valType, TokenValuationProtocol: *prot,
			})
		}
	}
	return out, rows.Err()
}

// ChangedChannel is the Postgres NOTIFY channel on which writers announce
// a changed user (payload: the user id), in the transaction that changes
// it, so that caches of users drop the entry at once.
const ChangedChannel = "user_changed"
