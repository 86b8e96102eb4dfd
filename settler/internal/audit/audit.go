// Package audit checks the invariants of the ledger (docs/architecture.md
// "Double entry") on a
// live database: per token the balances of all accounts sum to zero;
// user balances are never negative and locked never exceeds quantity;
// every journal entry balances; every balance equals the sum of its
// postings, and every posting's balance is the running sum before it.
//
// The trading checks hold the settlement to its rules: buy orders spend at
// most their reservation; an order is released exactly when it is final
// and settled; orders agree with their trades; every fill is settled;
// positions are never negative, lock what their live sells offer, and per
// market sum to what was issued; locked funds cover the open reservations
// (exactly, when no transfer is in flight: Quiescent).
package audit

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"blockspace.exchange/topics"
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

// openReservations are, per account and token, the funds that open buy
// orders (reserved − spent, until released) and accepted withdrawal
// requests (quantity + fee) hold locked.
const openReservations = `
	SELECT account_id, token_id, sum(held) AS held FROM (
	    SELECT account_id, token_id, GREATEST(reserved - spent, 0) AS held FROM orders WHERE side AND NOT released
	    UNION ALL
	    SELECT account_id, token_id, quantity + fee FROM withdraw_requests WHERE status = 0) r
	GROUP BY 1, 2`

// TradingChecks are the invariants of trading settlement, checked after
// Checks.
var TradingChecks = []Check{
	{"buy orders spend at most their reservation", `
		SELECT 'order ' || order_id || ' reserved ' || reserved || ' spent ' || spent
		FROM orders WHERE side AND spent > reserved`},
	{"released orders are final and settled", `
		SELECT 'order ' || order_id || ' status ' || status || ' fulfilled ' || fulfilled || ' settled ' || settled_quantity
		FROM orders WHERE released AND (status NOT IN ` + topics.FinalOrderStatusList() + ` OR settled_quantity <> fulfilled)`},
	{"final settled orders are released", `
		SELECT 'order ' || order_id || ' status ' || status || ' settled ' || settled_quantity || ' is not released'
		FROM orders WHERE NOT released AND status IN ` + topics.FinalOrderStatusList() + ` AND settled_quantity = fulfilled`},
	{"orders match their trades", `
		WITH t AS (
		    SELECT order_id, sum(quantity) AS q, sum(price * quantity) AS v, sum(fee) AS fee, sum(cost) AS cost FROM (
		        SELECT taker_order_id AS order_id, quantity, price,
		               CASE WHEN side THEN buyer_fee ELSE seller_fee END AS fee,
		               CASE WHEN side THEN price * quantity + buyer_fee ELSE 0 END AS cost FROM trades
		        UNION ALL
		        SELECT maker_order_id, quantity, price,
		               CASE WHEN side THEN seller_fee ELSE buyer_fee END,
		               CASE WHEN side THEN 0 ELSE price * quantity + buyer_fee END FROM trades) x
		    GROUP BY 1)
		SELECT 'order ' || coalesce(o.order_id, t.order_id) || ' settled ' || coalesce(o.settled_quantity, 0) || '/' ||
		       coalesce(o.settled_value, 0) || ' fees ' || coalesce(o.fees, 0) || ' spent ' || coalesce(o.spent, 0) ||
		       '; its trades ' || coalesce(t.q, 0) || '/' || coalesce(t.v, 0) || ' fees ' || coalesce(t.fee, 0) || ' cost ' || coalesce(t.cost, 0)
		FROM orders o FULL JOIN t ON t.order_id = o.order_id
		WHERE o.order_id IS NULL OR o.settled_quantity <> coalesce(t.q, 0) OR o.settled_value <> coalesce(t.v, 0)
		   OR o.fees <> coalesce(t.fee, 0) OR o.spent <> coalesce(t.cost, 0)`},
	{"fills are settled", `
		SELECT 'fill ' || command_id || ' refused: ' || reason FROM journal WHERE kind = 'trade.executed' AND status = 'rejected'
		UNION ALL
		SELECT 'fill ' || j.command_id || ' has no trade' FROM journal j
		WHERE j.kind = 'trade.executed' AND j.status = 'applied' AND NOT EXISTS (SELECT 1 FROM trades t WHERE 'fill:' || t.trade_id = j.command_id)
		UNION ALL
		SELECT 'trade ' || t.trade_id || ' has no applied journal entry' FROM trades t
		WHERE NOT EXISTS (SELECT 1 FROM journal j WHERE j.command_id = 'fill:' || t.trade_id AND j.status = 'applied')`},
	{"positions are not negative", `
		SELECT 'account ' || account_id || ' holds ' || quantity || ' of ' || instrument_id || ', locked ' || locked
		FROM positions WHERE quantity < 0 OR locked < 0 OR locked > quantity`},
	{"positions lock what their live sell orders offer", `
		SELECT 'account ' || p.account_id || ' ' || p.instrument_id || ' locks ' || p.locked || ' of ' || p.quantity ||
		       ', its live sells offer ' || coalesce(s.offered, 0)
		FROM positions p LEFT JOIN (
		    SELECT account_id, instrument_id, sum(quantity - GREATEST(fulfilled, settled_quantity)) AS offered
		    FROM orders WHERE NOT side AND status IN (1, 13) GROUP BY 1, 2) s USING (account_id, instrument_id)
		WHERE p.locked <> LEAST(p.quantity, coalesce(s.offered, 0))`},
	{"positions sum to what was issued", `
		SELECT 'market ' || i.instrument_id || ' positions sum to ' || coalesce(p.total, 0) || ', issued ' || i.issued
		FROM (SELECT 'ETH-WB-' || slot AS instrument_id, 1::numeric AS issued FROM trading_slots WHERE issued
		      UNION ALL
		      SELECT 'ETH-PC-' || slot, total_preconf FROM trading_slots WHERE issued) i
		LEFT JOIN (SELECT instrument_id, sum(quantity) AS total FROM positions GROUP BY 1) p USING (instrument_id)
		WHERE coalesce(p.total, 0) <> i.issued
		UNION ALL
		SELECT 'market ' || p.instrument_id || ' has positions, its slot is not issued' FROM positions p
		WHERE NOT EXISTS (SELECT 1 FROM trading_slots s WHERE s.issued AND s.slot = p.slot) GROUP BY p.instrument_id`},
	{"parked fills wait for a slot not issued", `
		SELECT 'fill ' || p.trade_id || ' is parked, slot ' || p.slot || ' is issued'
		FROM parked_fills p JOIN trading_slots s USING (slot) WHERE s.issued`},
	{"fills do not wait long for their slot", `
		SELECT 'fill ' || trade_id || ' of slot ' || slot || ' waits since ' || parked_at || ' for the slot''s market.open or first market.status'
		FROM parked_fills WHERE parked_at < now() - interval '10 minutes'`},
	{"locked funds cover the open reservations", `
		SELECT 'account ' || b.account_id || ' token ' || b.token_id || ' locks ' || b.locked || ', open orders and withdrawals hold ' || r.held
		FROM account_balances b JOIN (` + openReservations + `) r USING (account_id, token_id)
		WHERE b.locked < r.held`},
}

// QuiescentChecks hold only while nothing that locks funds outside the
// tables is in flight: a transfer keeps its amount locked from ingress's
// reservation until the settler applies it, and no row records it in
// between. Run them on a quiet system (Quiescent).
var QuiescentChecks = []Check{
	{"locked funds are exactly the open reservations", `
		SELECT 'account ' || b.account_id || ' token ' || b.token_id || ' locks ' || b.locked || ', open orders and withdrawals hold ' || coalesce(r.held, 0)
		FROM account_balances b LEFT JOIN (` + openReservations + `) r USING (account_id, token_id)
		WHERE NOT b.system AND b.locked <> coalesce(r.held, 0)`},
}

// Mode adds checks to Run.
type Mode int

// Quiescent adds QuiescentChecks.
const Quiescent Mode = 1

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
}, limit int, modes ...Mode) ([]Violation, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("audit: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var out []Violation
	for _, c := range Selected(modes...) {
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

// Selected are the checks Run evaluates for modes, in order.
func Selected(modes ...Mode) []Check {
	checks := append(slices.Clone(Checks), TradingChecks...)
	if slices.Contains(modes, Quiescent) {
		checks = append(checks, QuiescentChecks...)
	}
	return checks
}
