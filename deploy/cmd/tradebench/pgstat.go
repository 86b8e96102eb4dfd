package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStatSettings start the private Postgres with pg_stat_statements
// (-pgstat); its files come with Debian's postgresql package, which
// scripts/ensure-postgres.sh installs.
var pgStatSettings = map[string]string{"shared_preload_libraries": "pg_stat_statements"}

// commitTimeSettings make the private Postgres note when each transaction
// committed, which is when the ledger watch takes a trade to have become
// visible (pg_xact_commit_timestamp of its row's xmin): exact whatever
// -poll is, so the watch can poll seldom and cost the run little.
var commitTimeSettings = map[string]string{"track_commit_timestamp": "on"}

// pgStatTop is how many statements -pgstat prints.
const pgStatTop = 15

// statement is one line of pg_stat_statements.
type statement struct {
	calls, rows int64
	totalMS     float64 // total_exec_time, milliseconds
	query       string
}

// pgStatCreate creates the extension in the stack's database.
func pgStatCreate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("-pgstat: create pg_stat_statements: %w", err)
	}
	return nil
}

// pgStatReset forgets what was counted so far: what follows is the run's.
func pgStatReset(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return fmt.Errorf("-pgstat: reset pg_stat_statements: %w", err)
	}
	return nil
}

// pgStatRead returns the statements of the most total execution time.
func pgStatRead(ctx context.Context, pool *pgxpool.Pool) ([]statement, error) {
	rows, err := pool.Query(ctx, `SELECT calls, rows, total_exec_time, query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT $1`, pgStatTop)
	if err != nil {
		return nil, fmt.Errorf("-pgstat: read pg_stat_statements: %w", err)
	}
	var out []statement
	var s statement
	_, err = pgx.ForEachRow(rows, []any{&s.calls, &s.rows, &s.totalMS, &s.query}, func() error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("-pgstat: read pg_stat_statements: %w", err)
	}
	return out, nil
}

// printStatements prints the statements with their execution time an
// order of the run.
func printStatements(w io.Writer, stmts []statement, orders int) {
	n := float64(max(orders, 1))
	fmt.Fprintf(w, "\nPostgres statements of the measured run by total execution time (pg_stat_statements, top %d):\n", pgStatTop)
	fmt.Fprintf(w, "  %9s %9s %12s  %s\n", "calls", "rows", "µs an order", "statement")
	for _, s := range stmts {
		fmt.Fprintf(w, "  %9d %9d %12.1f  %s\n", s.calls, s.rows, s.totalMS*1e3/n, shortStatement(s.query))
	}
}

// shortStatement is a statement's first 100 characters with each run of
// white space made one space.
func shortStatement(q string) string {
	r := []rune(strings.Join(strings.Fields(q), " "))
	if len(r) > 100 {
		return string(r[:100])
	}
	return string(r)
}
