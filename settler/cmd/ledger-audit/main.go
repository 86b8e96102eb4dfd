// Command ledger-audit checks the ledger's invariants on a live database
// (DATABASE_URL) and exits 0 when all hold, 1 when any is broken (each
// violation is printed), 2 when it cannot run. See docs/operations.md.
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
	flag.Parse()
	os.Exit(run(os.Getenv("DATABASE_URL"), *limit, *timeout, os.Stdout, os.Stderr))
}

func run(url string, limit int, timeout time.Duration, stdout, stderr io.Writer) int {
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
	violations, err := audit.Run(ctx, pool, limit)
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
	fmt.Fprintf(stdout, "ledger-audit: %d checks passed\n", len(audit.Checks))
	return 0
}
