package ledger_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
)

// BenchmarkApplyTransfers applies ledger transfer commands in batches of
// 5000, each batch in one transaction with its consumer offset, as the
// settler does, and reports commands/s next to a plain loop of one-row
// INSERT statements measured in the same run. server-µs/command is the
// CPU time the Postgres backends spent per command (read from /proc): it
// says how much work a command costs the server, and unlike commands/s
// it hardly moves when other processes load the machine.
//
// instances=1 is one settler; instances=2 is two settler instances of
// one consumer group, each applying the partitions it owns (users of its
// own) in its own transactions at the same time.
func BenchmarkApplyTransfers(b *testing.B) {
	for _, instances := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", instances), func(b *testing.B) { benchmarkApply(b, instances) })
	}
}

type benchAccount struct{ user, cur, pre int64 }

func benchmarkApply(b *testing.B, instances int) {
	pool := pgtest.New(b, schema.Migrations())
	ctx := context.Background()
	const users, batch = 1000, 5000
	accs := fundedAccounts(b, pool, users)
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	// Instance i owns partition i: the users u with u mod instances = i,
	// and applies them on a connection of its own.
	next := make([]int64, instances)
	conns := make([]*pgxpool.Conn, instances)
	backends := make([]int, instances)
	for i := range conns {
		if conns[i], err = pool.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Release()
		if err := conns[i].QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backends[i]); err != nil {
			b.Fatal(err)
		}
	}
	applyBatch := func(i int) error {
		cmds := make([]ledger.Command, 0, batch)
		for range batch {
			next[i]++
			id := next[i]*int64(instances) + int64(i)
			a := accs[int(next[i]*int64(instances)+int64(i))%users]
			cmds = append(cmds, transfer(id, a.user, a.cur, a.pre, "0.001"))
		}
		return pgx.BeginFunc(ctx, conns[i], func(tx pgx.Tx) error {
			res, err := ledger.Apply(ctx, tx, sys, cmds, nil)
			if err != nil || res.Applied != batch {
				return fmt.Errorf("apply: %+v %w", res, err)
			}
			return ledger.StoreOffsets(ctx, tx, "bench", []ledger.Offset{{Topic: "t", Partition: int32(i), Next: next[i]}})
		})
	}
	total := 0
	cpuBefore, cpuKnown := processCPU(backends)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range instances {
			wg.Go(func() {
				if err := applyBatch(i); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		total += instances * batch
	}
	settled := float64(total) / time.Since(start).Seconds()
	b.StopTimer()
	if cpuAfter, ok := processCPU(backends); ok && cpuKnown {
		b.ReportMetric(float64((cpuAfter-cpuBefore).Microseconds())/float64(total), "server-µs/command")
	}
	plain := insertLoop(b, pool)
	b.ReportMetric(settled, "commands/s")
	b.ReportMetric(plain, "baseline-inserts/s")
	b.ReportMetric(settled/plain, "x-baseline")
	mustAudit(b, pool)
}

// fundedAccounts creates users with a deposit each and reserves all of it
// in their current accounts, as ingress does before a transfer.
func fundedAccounts(b *testing.B, pool *pgxpool.Pool, users int) []benchAccount {
	b.Helper()
	var cmds []ledger.Command
	for u := range users {
		cmds = append(cmds, deposit(fmt.Sprintf("d%d", u), fmt.Sprintf("0x%040x", u+1), "1000000"))
	}
	apply(b, pool, cmds...)
	accs := make([]benchAccount, users)
	for u := range users {
		accs[u].user, accs[u].cur, accs[u].pre = accountsOf(b, pool, fmt.Sprintf("0x%040x", u+1))
	}
	if _, err := pool.Exec(context.Background(), `UPDATE account_balances SET locked = quantity WHERE NOT system`); err != nil {
		b.Fatal(err)
	}
	return accs
}

// processCPU sums the user and system CPU time of processes, as Linux
// accounts it in /proc/<pid>/stat; ok is false where that cannot be read.
func processCPU(pids []int) (total time.Duration, ok bool) {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// The fields after the command name, which is in parentheses:
		// utime and stime are the 12th and 13th, in clock ticks of 10 ms.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return 0, false
		}
		for _, v := range f[11:13] {
			ticks, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, false
			}
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total, true
}

// insertLoop measures one-row INSERT statements per second, the baseline.
func insertLoop(b *testing.B, pool *pgxpool.Pool) float64 {
	b.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_baseline (id bigint, v numeric)`); err != nil {
		b.Fatal(err)
	}
	const baseline = 2000
	start := time.Now()
	for i := range baseline {
		if _, err := pool.Exec(ctx, `INSERT INTO bench_baseline VALUES ($1, $2::numeric)`, i, "0.001"); err != nil {
			b.Fatal(err)
		}
	}
	return float64(baseline) / time.Since(start).Seconds()
}
