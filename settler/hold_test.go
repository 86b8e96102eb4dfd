package settler_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres"
)

// The crash tests stop a settler inside one of its batches at a place
// they name, not at one they race for: a transaction of the test's own
// takes locks that the batch's Postgres transaction must wait for there,
// the records are produced, and the crash comes once Postgres shows the
// batch waiting. Nothing the held batch wrote is committed then, however
// fast or slow the machine.

// A batchPoint is a place inside a settler batch's Postgres transaction:
// the statement whose locks the batch waits for there, and whether the
// batch has written by then.
type batchPoint struct {
	where   string // where the batch is held, for messages
	lock    string // a SELECT ... FOR UPDATE or a LOCK TABLE
	args    []any
	written bool
}

// Places in a batch of the ledger consumer and of the trading consumer:
// at its start, its records read and nothing written, waiting to journal
// them or to write their slots; halfway, waiting for the balance rows of
// accounts; at its end, every record written, waiting to store the next
// offsets of its group.
var (
	ledgerStart  = batchPoint{where: "at its start, waiting to journal its commands", lock: `LOCK TABLE journal IN SHARE MODE`}
	tradingStart = batchPoint{where: "at its start, waiting to write its slots", lock: `LOCK TABLE trading_slots IN SHARE MODE`}
)

func balancesOf(accounts ...int64) batchPoint {
	return batchPoint{where: "halfway, waiting for a balance row", written: true,
		lock: `SELECT 1 FROM account_balances WHERE account_id = ANY($1) FOR UPDATE`, args: []any{accounts}}
}

func offsetsOf(group string) batchPoint {
	return batchPoint{where: "at its end, waiting to store its offsets", written: true,
		lock: `SELECT 1 FROM consumer_offsets WHERE consumer_group = $1 FOR UPDATE`, args: []any{group}}
}

// hold takes the locks of p in a transaction of the test's own and keeps
// them until release is called, at the latest when the test ends.
func hold(t *testing.T, pool *pgxpool.Pool, p batchPoint) (release func()) {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback(context.Background()) }
	t.Cleanup(release)
	if _, err := tx.Exec(t.Context(), p.lock, p.args...); err != nil {
		t.Fatal(err)
	}
	return release
}

// waitHeld waits until a batch of the settler is held at p: one of its
// connections (application_name "settler", as the binary's and
// settlerPool's are) waits for a lock in a transaction that has written,
// or has not, as p says.
func waitHeld(t *testing.T, pool *pgxpool.Pool, p batchPoint) {
	t.Helper()
	poll.Until(t, "a settler batch held "+p.where, func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND application_name = 'settler' AND wait_event_type = 'Lock' AND (backend_xid IS NOT NULL) = $1`, p.written) > 0
	})
}

// waitGone waits until the settler has no connection left: after a crash,
// the server has ended the dead client's sessions and rolled their
// transactions back.
func waitGone(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	poll.Until(t, "the crashed settler's connections closed", func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'settler'`) == 0
	})
}

// settlerPool opens a pool of its own on pool's database for an
// in-process settler, named "settler" in pg_stat_activity as the binary's
// is, so that its batches can be told from the test's queries. It is
// closed when the test ends, if not before.
func settlerPool(t *testing.T, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	p, err := postgres.Open(t.Context(), poolURL(t, pool), postgres.Options{ApplicationName: "settler"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
