// Package audit checks the invariants of the ledger (DESIGN rule 5) on a
// live database: per token the balances of all accounts sum to zero;
// user balances are never negative and locked never exceeds quantity;
// every journal entry balances; every balance equals the sum of its
// postings, and every posting's balance is the running sum before it.
package audit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is a pool or a connection.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Check is one invariant: a query that returns a row per violation.
type Check struct {
	Name  string
	Query string
}

// Checks are the invariants, in the order they are reported.
var Checks = []Check{
	{"token sums are zero", `
		SELECT 'token ' || token_id || ' sums to ' || sum(quantity)
		FROM account_balances GROUP BY token_id HAVING sum(quantity) <> 0`},
	{"user balances not negative", `
		SELECT 'account ' || account_id || ' token ' || token_id || ' quantity ' || quantity || ' locked ' || locked
		FROM account_balances WHERE NOT system AND (quantity < 0 OR locked < 0 OR locked > quantity)`},
	{"system accounts lock nothing", `
		SELECT 'system account ' || account_id || ' token ' || token_id || ' locked ' || locked
		FROM account_balances WHERE system AND locked <> 0`},
	{"entries balance", `
		SELECT 'entry ' || entry_id || ' token ' || token_id || ' sums to ' || sum(amount)
		FROM postings GROUP BY entry_id, token_id HAVING sum(amount) <> 0`},
	{"rejected entries post nothing", `
		SELECT 'rejected entry ' || j.entry_id || ' (' || j.command_id || ') has postings'
		FROM journal j WHERE j.status = 'rejected' AND EXISTS (SELECT 1 FROM postings p WHERE p.entry_id = j.entry_id)`},
	{"balances match the journal", `
		SELECT 'account ' || coalesce(b.account_id, p.account_id) || ' token ' || coalesce(b.token_id, p.token_id) ||
		       ' balance ' || coalesce(b.quantity, 0) || ' postings ' || coalesce(p.total, 0)
		FROM account_balances b
		FULL JOIN (SELECT account_id, token_id, sum(amount) AS total FROM postings GROUP BY 1, 2) p
		  ON p.account_id = b.account_id AND p.token_id = b.token_id
		WHERE coalesce(b.quantity, 0) <> coalesce(p.total, 0)`},
	{"account transactions carry running balances", `
		SELECT 'posting ' || posting_id || ' balance ' || balance || ' running sum ' || running
		FROM (SELECT posting_id, balance,
		             sum(amount) OVER (PARTITION BY account_id, token_id ORDER BY posting_id) AS running
		      FROM postings) s
		WHERE balance <> running`},
	{"withdrawals in flight match open requests", `
		SELECT 'token ' || b.token_id || ' in flight ' || b.quantity || ' open requests ' || coalesce(r.total, 0)
		FROM account_balances b JOIN accounts a ON a.account_id = b.account_id AND a.user_id IS NULL AND a.type = 103
		LEFT JOIN (SELECT token_id, sum(quantity) AS total FROM withdraw_requests WHERE status IN (1, 2) GROUP BY 1) r
		  ON r.token_id = b.token_id
		WHERE b.quantity <> coalesce(r.total, 0)`},
}

// Violation is one broken invariant.
type Violation struct {
	Check  string
	Detail string
}

func (v Violation) String() string { return v.Check + ": " + v.Detail }

// Run evaluates every check in one repeatable-read snapshot, so that a
// ledger written to while it runs is judged at one instant. It returns at
// most limit violations per check.
func Run(ctx context.Context, db interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}, limit int) ([]Violation, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("audit: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var out []Violation
	for _, c := range Checks {
		rows, err := tx.Query(ctx, c.Query+fmt.Sprintf(" LIMIT %d", limit))
		if err != nil {
			return nil, fmt.Errorf("audit %q: %w", c.Name, err)
		}
		details, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("audit %q: %w", c.Name, err)
		}
		for _, d := range details {
			out = append(out, Violation{Check: c.Name, Detail: d})
		}
	}
	return out, nil
}
