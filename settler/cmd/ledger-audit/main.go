// Command ledger-audit checks the invariants of the ledger and of trading
// settlement on a live database (DATABASE_URL) and exits 0 when all hold,
// 1 when any is broken (each violation is printed), 2 when it cannot run.
// See docs/operations.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/settler/internal/audit"
)

func main() {
	limit := flag.Int("limit", 20, "violations printed per check")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	quiescent := flag.Bool("quiescent", false, "also check that locked funds are exactly the open reservations (true only while no transfer is in flight)")
	flag.Parse()
	var modes []audit.Mode
	if *quiescent {
		modes = append(modes, audit.Quiescent)
	}
	os.Exit(run(os.Getenv("DATABASE_URL"), *limit, *timeout, modes, os.Stdout, os.Stderr))
}

func run(url string, limit int, timeout time.Duration, modes []audit.Mode, stdout, stderr io.Writer) int {
	if url == "" {
		fmt.Fprintln(stderr, "ledger-audit: DATABASE_URL is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := postgres.Open(ctx, url, postgres.Options{ApplicationName: "ledger-audit", MaxConns: 1})
	if err != nil {
		fmt.Fprintln(stderr, "ledger-audit:", err)
		return 2
	}
	defer pool.Close()
	violations, err := audit.Run(ctx, pool, limit, modes...)
	if err != nil {
		fmt.Fprintln(stderr, "ledger-audit:", err)
		return 2
	}
	for _, v := range violations {
		fmt.Fprintln(stdout, "VIOLATION", v)
	}
	if len(violations) > 0 {
		fmt.Fprintf(stdout, "ledger-audit: %d violations\n", len(violations))
		return 1
	}
	fmt.Fprintf(stdout, "ledger-audit: %d checks passed\n", len(audit.Selected(modes...)))
	return 0
}
