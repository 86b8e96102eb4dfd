package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
)

// BenchmarkApplyTransfers applies ledger transfer commands in batches of
// 5000, each batch in one transaction with its consumer offset, as the
// settler does, and reports commands/s next to a plain loop of one-row
// INSERT statements measured in the same run.
func BenchmarkApplyTransfers(b *testing.B) {
	pool := pgtest.New(b, schema.Migrations())
	ctx := context.Background()
	const users, batch = 1000, 5000
	var cmds []ledger.Command
	for u := range users {
		cmds = append(cmds, deposit(fmt.Sprintf("d%d", u), fmt.Sprintf("0x%040x", u+1), "1000000"))
	}
	apply(b, pool, cmds...)
	type acc struct{ user, cur, pre int64 }
	accs := make([]acc, users)
	for u := range users {
		accs[u].user, accs[u].cur, accs[u].pre = accountsOf(b, pool, fmt.Sprintf("0x%040x", u+1))
	}
	if _, err := pool.Exec(ctx, `UPDATE account_balances SET locked = quantity WHERE NOT system`); err != nil {
		b.Fatal(err)
	}
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	next := int64(0)
	total := 0
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		cmds = cmds[:0]
		for range batch {
			next++
			a := accs[next%users]
			cmds = append(cmds, transfer(next, a.user, a.cur, a.pre, "0.001"))
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			res, err := ledger.Apply(ctx, tx, sys, cmds, nil)
			if err != nil || res.Applied != batch {
				return fmt.Errorf("apply: %+v %w", res, err)
			}
			return ledger.StoreOffsets(ctx, tx, "bench", []ledger.Offset{{Topic: "t", Partition: 0, Next: next}})
		})
		if err != nil {
			b.Fatal(err)
		}
		total += batch
	}
	settled := float64(total) / time.Since(start).Seconds()
	b.StopTimer()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_baseline (id bigint, v numeric)`); err != nil {
		b.Fatal(err)
	}
	const baseline = 2000
	bstart := time.Now()
	for i := range baseline {
		if _, err := pool.Exec(ctx, `INSERT INTO bench_baseline VALUES ($1, $2::numeric)`, i, "0.001"); err != nil {
			b.Fatal(err)
		}
	}
	plain := float64(baseline) / time.Since(bstart).Seconds()
	b.ReportMetric(settled, "commands/s")
	b.ReportMetric(plain, "baseline-inserts/s")
	b.ReportMetric(settled/plain, "x-baseline")
	mustAudit(b, pool)
}
