// Package reference serves the public reference data (networks, tokens,
// fees, funding addresses and limits) from Postgres through an in-memory
// cache of pre-encoded responses: the data changes rarely and is read on
// every client start, so it is reloaded on an interval, not per request.
package reference

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
)

// Network is the Network resource of the interface.
type Network struct {
	NetworkID int64  `json:"networkId"`
	ChainID   int64  `json:"chainId"`
	Name      string `json:"name"`
	Enable    bool   `json:"enable"`
	Visible   bool   `json:"visible"`

	collateral *string
}

// Token is the Token resource of the interface.
type Token struct {
	TokenID      int64           `json:"tokenId"`
	Code         string          `json:"code"`
	Name         string          `json:"name"`
	TokenAddress string          `json:"tokenAddress"`
	Decimals     int             `json:"decimals"`
	NativeToken  bool            `json:"nativeToken"`
	WithdrawFee  decimal.Decimal `json:"withdrawFee"`
	Price        decimal.Decimal `json:"price"`
}

// Fees are the fee rates of the regular user class.
type Fees struct {
	BuyFeeRate           decimal.Decimal `json:"buyFeeRate"`
	PrimarySellFeeRate   decimal.Decimal `json:"primarySellFeeRate"`
	SecondarySellFeeRate decimal.Decimal `json:"secondarySellFeeRate"`
}

// DailyWithdrawLimit is the public (caller-independent) limit of a token
// on a chain.
type DailyWithdrawLimit struct {
	TokenID                int64           `json:"tokenId"`
	ChainID                int64           `json:"chainId"`
	TokenAddress           string          `json:"tokenAddress"`
	WithdrawFee            decimal.Decimal `json:"withdrawFee"`
	DailyWithdrawLimit     decimal.Decimal `json:"dailyWithdrawLimit"`
	RemainingWithdrawLimit decimal.Decimal `json:"remainingWithdrawLimit"`
}

// snapshot is everything the reference endpoints answer with, read in one
// repeatable-read transaction so the parts agree with each other.
type snapshot struct {
	networks []Network
	tokens   []Token
	fees     Fees
	limits   []DailyWithdrawLimit
}

// regularUserClass is the class whose fees the public endpoint shows.
const regularUserClass = 1

func load(ctx context.Context, pool *pgxpool.Pool, chainID int64) (snapshot, error) {
	var s snapshot
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if s.networks, err = loadNetworks(ctx, tx); err != nil {
			return err
		}
		if s.tokens, err = loadTokens(ctx, tx, chainID); err != nil {
			return err
		}
		if s.fees, err = loadFees(ctx, tx); err != nil {
			return err
		}
		s.limits, err = loadLimits(ctx, tx, chainID)
		return err
	})
	return s, err
}

func loadNetworks(ctx context.Context, tx pgx.Tx) ([]Network, error) {
	rows, _ := tx.Query(ctx, `SELECT network_id, chain_id, name, enable, visible, collateral_contract FROM networks ORDER BY network_id`)
	nets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Network, error) {
		var n Network
		err := r.Scan(&n.NetworkID, &n.ChainID, &n.Name, &n.Enable, &n.Visible, &n.collateral)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("load networks: %w", err)
	}
	return nets, nil
}

func loadTokens(ctx context.Context, tx pgx.Tx, chainID int64) ([]Token, error) {
	rows, _ := tx.Query(ctx, `
		SELECT t.token_id, t.code, t.name, t.token_address, t.decimals, t.native_token,
		       COALESCE(w.withdraw_fee, 0), t.price
		FROM tokens t LEFT JOIN withdraw_limits w ON w.token_id = t.token_id AND w.chain_id = $1
		ORDER BY t.token_id`, chainID)
	toks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) {
		var t Token
		err := r.Scan(&t.TokenID, &t.Code, &t.Name, &t.TokenAddress, &t.Decimals, &t.NativeToken, &t.WithdrawFee, &t.Price)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	return toks, nil
}

func loadFees(ctx context.Context, tx pgx.Tx) (Fees, error) {
	var f Fees
	err := tx.QueryRow(ctx, `SELECT buy_fee_rate, primary_sell_fee_rate, secondary_sell_fee_rate
		FROM fee_schedules WHERE user_class = $1`, regularUserClass).
		Scan(&f.BuyFeeRate, &f.PrimarySellFeeRate, &f.SecondarySellFeeRate)
	if err != nil {
		return Fees{}, fmt.Errorf("load fees: %w", err)
	}
	return f, nil
}

func loadLimits(ctx context.Context, tx pgx.Tx, chainID int64) ([]DailyWithdrawLimit, error) {
	rows, _ := tx.Query(ctx, `
		SELECT w.token_id, w.chain_id, t.token_address, w.withdraw_fee, w.daily_limit
		FROM withdraw_limits w JOIN tokens t USING (token_id)
		WHERE w.chain_id = $1 ORDER BY w.token_id`, chainID)
	lims, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DailyWithdrawLimit, error) {
		var l DailyWithdrawLimit
		err := r.Scan(&l.TokenID, &l.ChainID, &l.TokenAddress, &l.WithdrawFee, &l.DailyWithdrawLimit)
		l.RemainingWithdrawLimit = l.DailyWithdrawLimit
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("load withdraw limits: %w", err)
	}
	return lims, nil
}

// SetCollateralContract records the deposit contract of a chain, as the
// deployment configures it. An empty address leaves the row unchanged.
func SetCollateralContract(ctx context.Context, pool *pgxpool.Pool, chainID int64, address string) error {
	if address == "" {
		return nil
	}
	tag, err := pool.Exec(ctx, `UPDATE networks SET collateral_contract = lower($2) WHERE chain_id = $1`, chainID, address)
	if err != nil {
		return fmt.Errorf("set collateral contract: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("set collateral contract: no network with chain id %d", chainID)
	}
	return nil
}
