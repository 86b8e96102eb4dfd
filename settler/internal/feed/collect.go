// Package feed is the live account feed the settler publishes on
// account-events after each committed batch (docs/topics.md "Account
// feed"): the postings of the batch's entries, the balances and the
// positions it changed, keyed by their owner's user id.
//
// Delivery is at least once. Collect runs inside the batch's transaction
// and writes the batch's feed to account_feed; the Publisher sends it
// after the commit and deletes the row once Kafka acknowledged every
// record; a row left by a crash is sent again by the relay. A resent
// record has the same id and the same content: postings are immutable,
// and balances and positions are stored as they were published.
package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// PositionKey names one account's position in one market.
type PositionKey struct {
	Account    int64
	Instrument string
}

// Changes names what a batch changed: the journal entries it created,
// the balances and the positions.
type Changes struct {
	Entries []int64
	// Balances are every balance the batch changed; nil stands for the
	// balances the entries posted to.
	Balances  []ledger.BalanceKey
	Positions []PositionKey
}

// Batch is the feed of one committed batch.
type Batch struct {
	// Version is the batch's feed version, the version of every balance
	// and position state in it.
	Version int64
	// At is when the batch's transaction started, the time of its balance
	// and position records.
	At time.Time
	// Postings are read after the commit, by the publisher, from the
	// batch's entries: they never change, and reading them is no work for
	// the batch's transaction.
	Postings  []topics.TransactionPosted
	Balances  []topics.BalanceChanged
	Positions []topics.PositionChanged
	entries   []int64
}

// Querier is a transaction or a pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Collect reads the user-visible result of the changes in tx, after the
// batch wrote them, and stores it in account_feed. It returns nil when the
// changes touch no user account. Call it last in the transaction: the
// version it takes then orders this batch after every batch whose changes
// it waited for.
func Collect(ctx context.Context, tx Querier, c Changes) (*Batch, error) {
	if len(c.Entries) == 0 && len(c.Balances) == 0 && len(c.Positions) == 0 {
		return nil, nil
	}
	b := &Batch{entries: c.Entries}
	var err error
	if b.Balances, err = readBalances(ctx, tx, c.Balances, c.Entries); err != nil {
		return nil, err
	}
	if b.Positions, err = readPositions(ctx, tx, c.Positions); err != nil {
		return nil, err
	}
	if len(b.Balances) == 0 && len(b.Positions) == 0 {
		return nil, nil // no user account changed: the entries posted to system accounts only
	}
	balances, err := json.Marshal(b.Balances)
	if err != nil {
		return nil, fmt.Errorf("account feed: %w", err)
	}
	positions, err := json.Marshal(b.Positions)
	if err != nil {
		return nil, fmt.Errorf("account feed: %w", err)
	}
	entries := c.Entries
	if entries == nil {
		entries = []int64{}
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO account_feed (version, entry_ids, balances, positions)
		VALUES (nextval('account_feed_versions'), $1, $2, $3) RETURNING version, created`,
		entries, balances, positions).Scan(&b.Version, &b.At)
	if err != nil {
		return nil, fmt.Errorf("store account feed: %w", err)
	}
	b.setVersion()
	return b, nil
}

func (b *Batch) setVersion() {
	for i := range b.Balances {
		b.Balances[i].Version = b.Version
	}
	for i := range b.Positions {
		b.Positions[i].Version = b.Version
	}
}

// readPostings returns the postings of entries on user accounts.
func readPostings(ctx context.Context, q Querier, entries []int64) ([]topics.TransactionPosted, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `
		SELECT p.posting_id, p.account_id, a.user_id, p.token_id, p.type, p.amount, p.balance, p.created
		FROM postings p JOIN accounts a USING (account_id)
		WHERE p.entry_id = ANY($1) AND a.user_id IS NOT NULL ORDER BY p.posting_id`, entries)
	if err != nil {
		return nil, fmt.Errorf("read postings for the account feed: %w", err)
	}
	var out []topics.TransactionPosted
	var p topics.TransactionPosted
	var amount, balance decimal.Decimal
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&p.TrxID, &p.AccountID, &p.UserID, &p.TokenID, &p.Type, &amount, &balance, &at}, func() error {
		p.Amount, p.Balance, p.CreateDate = amount.String(), balance.String(), at.UnixMilli()
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read postings for the account feed: %w", err)
	}
	return out, nil
}

// readBalances returns the balances of keys that belong to users; with
// keys nil, those entries posted to.
func readBalances(ctx context.Context, q Querier, keys []ledger.BalanceKey, entries []int64) ([]topics.BalanceChanged, error) {
	keyed, args := `SELECT account_id, token_id FROM postings WHERE entry_id = ANY($1)`, []any{entries}
	if keys != nil {
		accs, toks := make([]int64, len(keys)), make([]int64, len(keys))
		for i, k := range keys {
			accs[i], toks[i] = k.Account, k.Token
		}
		keyed, args = `SELECT * FROM unnest($1::bigint[], $2::int[])`, []any{accs, toks}
	} else if len(entries) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `
		SELECT b.account_id, a.user_id, b.token_id, b.quantity, b.locked
		FROM account_balances b JOIN accounts a USING (account_id)
		WHERE (b.account_id, b.token_id) IN (`+keyed+`) AND a.user_id IS NOT NULL
		ORDER BY 1, 3`, args...)
	if err != nil {
		return nil, fmt.Errorf("read balances for the account feed: %w", err)
	}
	var out []topics.BalanceChanged
	var b topics.BalanceChanged
	var quantity, locked decimal.Decimal
	_, err = pgx.ForEachRow(rows, []any{&b.AccountID, &b.UserID, &b.TokenID, &quantity, &locked}, func() error {
		b.Quantity, b.Locked, b.Available = quantity.String(), locked.String(), quantity.Sub(locked).String()
		out = append(out, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read balances for the account feed: %w", err)
	}
	return out, nil
}

// readPositions returns the positions of keys held by users' accounts.
func readPositions(ctx context.Context, q Querier, keys []PositionKey) ([]topics.PositionChanged, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	accs, insts := make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		accs[i], insts[i] = k.Account, k.Instrument
	}
	rows, err := q.Query(ctx, `
		SELECT p.account_id, a.user_id, p.instrument_id, p.market_id, p.slot, p.quantity, p.locked, p.average_price,
		       p.expired, p.update_date
		FROM positions p JOIN accounts a USING (account_id)
		WHERE (p.account_id, p.instrument_id) IN (SELECT * FROM unnest($1::bigint[], $2::text[])) AND a.user_id IS NOT NULL
		ORDER BY 1, 3`, accs, insts)
	if err != nil {
		return nil, fmt.Errorf("read positions for the account feed: %w", err)
	}
	var out []topics.PositionChanged
	var p topics.PositionChanged
	var quantity, locked decimal.Decimal
	var avg decimal.NullDecimal
	var updated time.Time
	_, err = pgx.ForEachRow(rows, []any{&p.AccountID, &p.UserID, &p.InstrumentID, &p.MarketID, &p.Slot, &quantity, &locked, &avg,
		&p.Expired, &updated}, func() error {
		p.Quantity, p.Locked, p.Available = quantity.String(), locked.String(), quantity.Sub(locked).String()
		p.AveragePrice = ""
		if avg.Valid {
			p.AveragePrice = avg.Decimal.String()
		}
		p.UpdateDate = updated.UnixMilli()
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read positions for the account feed: %w", err)
	}
	return out, nil
}
