package ledger_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
)

// runningBalances returns the balance after each posting of an account, in
// posting order.
func runningBalances(t *testing.T, pool *pgxpool.Pool, acc int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT balance::text FROM postings WHERE account_id = $1 AND token_id = 1 ORDER BY posting_id`, acc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func journalStatus(t *testing.T, pool *pgxpool.Pool, id string) (status, reason string) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT status, reason FROM journal WHERE command_id = $1`, id).Scan(&status, &reason); err != nil {
		t.Fatalf("journal row of %s: %v", id, err)
	}
	return
}

func TestBatchEdges(t *testing.T) {
	cases := []struct {
		name string
		// locked is reserved on the current account before the batch.
		locked string
		// batch builds the commands from the user and its two accounts.
		batch func(user, cur, pre int64) []commandSpec
		// the result, the balances after and each posting's balance after
		// on the current account.
		applied, duplicates, rejected int
		cur, curLocked, pre           string
		curRunning                    []string
		rejectedIDs                   []int64
	}{
		{
			name:   "one account many times in a batch",
			locked: "3",
			batch: func(user, cur, pre int64) []commandSpec {
				var out []commandSpec
				for i := range 30 {
					out = append(out, commandSpec{id: int64(i + 1), from: cur, to: pre, qty: "0.1"})
				}
				return out
			},
			applied: 30, cur: "7", curLocked: "0", pre: "3",
			curRunning: runningFrom("10", "-0.1", 30),
		},
		{
			name:   "duplicates inside one batch apply once",
			locked: "2",
			batch: func(user, cur, pre int64) []commandSpec {
				return []commandSpec{
					{id: 1, from: cur, to: pre, qty: "1"},
					{id: 1, from: cur, to: pre, qty: "1"},
					{id: 2, from: cur, to: pre, qty: "0.5"},
					{id: 1, from: cur, to: pre, qty: "1"},
				}
			},
			applied: 2, duplicates: 2, cur: "8.5", curLocked: "0.5", pre: "1.5",
			curRunning: []string{"10", "9", "8.5"},
		},
		{
			name:   "a rejected command in the middle changes nothing and the rest apply",
			locked: "1",
			batch: func(user, cur, pre int64) []commandSpec {
				return []commandSpec{
					{id: 1, from: cur, to: pre, qty: "0.25"},
					{id: 2, from: cur, to: pre, qty: "5"}, // more than reserved
					{id: 3, from: cur, to: pre, qty: "0.25"},
					{id: 4, from: pre, to: cur, qty: "0.1"}, // nothing reserved on preconf
					{id: 5, from: cur, to: pre, qty: "0.5"},
				}
			},
			applied: 3, rejected: 2, cur: "9", curLocked: "0", pre: "1",
			curRunning:  []string{"10", "9.75", "9.5", "9"},
			rejectedIDs: []int64{2, 4},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool := pgtest.New(t, schema.Migrations())
			apply(t, pool, deposit("d1", alice, "10"))
			user, cur, pre := accountsOf(t, pool, alice)
			lock(t, pool, cur, tc.locked)
			specs := tc.batch(user, cur, pre)
			cmds := make([]ledger.Command, len(specs))
			for i, s := range specs {
				cmds[i] = transfer(s.id, user, s.from, s.to, s.qty)
			}
			res := apply(t, pool, cmds...)
			if res.Applied != tc.applied || res.Duplicates != tc.duplicates || res.Rejected != tc.rejected {
				t.Fatalf("result %+v, want %d applied %d duplicates %d rejected", res, tc.applied, tc.duplicates, tc.rejected)
			}
			q, l := balance(t, pool, cur)
			if !q.Equal(decimal.RequireFromString(tc.cur)) || !l.Equal(decimal.RequireFromString(tc.curLocked)) {
				t.Fatalf("current %s locked %s, want %s locked %s", q, l, tc.cur, tc.curLocked)
			}
			if q, _ := balance(t, pool, pre); !q.Equal(decimal.RequireFromString(tc.pre)) {
				t.Fatalf("preconf %s, want %s", q, tc.pre)
			}
			got := runningBalances(t, pool, cur)
			if len(got) != len(tc.curRunning) {
				t.Fatalf("running balances %v, want %v", got, tc.curRunning)
			}
			for i := range got {
				if !decimal.RequireFromString(got[i]).Equal(decimal.RequireFromString(tc.curRunning[i])) {
					t.Fatalf("running balances %v, want %v", got, tc.curRunning)
				}
			}
			for _, id := range tc.rejectedIDs {
				if status, reason := journalStatus(t, pool, transfer(id, 0, 0, 0, "").ID); status != "rejected" || reason == "" {
					t.Fatalf("transfer %d: status %q reason %q", id, status, reason)
				}
			}
			// Replaying the batch changes nothing.
			res = apply(t, pool, cmds...)
			if res.Applied != 0 || res.Rejected != 0 || res.Duplicates != len(cmds) {
				t.Fatalf("replay result %+v", res)
			}
			if q2, _ := balance(t, pool, cur); !q2.Equal(q) {
				t.Fatalf("replay moved current from %s to %s", q, q2)
			}
			mustAudit(t, pool)
		})
	}
}

type commandSpec struct {
	id       int64
	from, to int64
	qty      string
}

// runningFrom lists n balances after start, each step apart, start first.
func runningFrom(start, step string, n int) []string {
	v, d := decimal.RequireFromString(start), decimal.RequireFromString(step)
	out := []string{v.String()}
	for range n {
		v = v.Add(d)
		out = append(out, v.String())
	}
	return out
}
