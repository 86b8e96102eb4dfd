// Command ledger-audit checks the invariants of the ledger and of trading
// settlement on a live database (DATABASE_URL) and exits 0 when all hold,
// 1 when any is broken (each violation is printed), 2 when it cannot run.
// See docs/operations.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/settler/internal/audit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv("DATABASE_URL"), os.Stdout, os.Stderr))
}

// run audits the database at url with the flags in args and returns the
// exit status.
func run(args []string, url string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if err == nil && url == "" {
		err = errors.New("DATABASE_URL is required")
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "ledger-audit:", err)
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	pool, err := postgres.Open(ctx, url, postgres.Options{ApplicationName: "ledger-audit", MaxConns: 1})
	if err != nil {
		fmt.Fprintln(stderr, "ledger-audit:", err)
		return 2
	}
	defer pool.Close()
	violations, err := audit.Run(ctx, pool, cfg.limit, cfg.modes...)
	if err != nil {
		fmt.Fprintln(stderr, "ledger-audit:", err)
		return 2
	}
	return report(stdout, violations, len(audit.Selected(cfg.modes...)))
}

type config struct {
	limit   int
	timeout time.Duration
	modes   []audit.Mode
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	flags := flag.NewFlagSet("ledger-audit", flag.ContinueOnError)
	flags.SetOutput(stderr)
	limit := flags.Int("limit", 20, "violations printed per check (at least 1)")
	timeout := flags.Duration("timeout", 5*time.Minute, "give up after this long")
	quiescent := flags.Bool("quiescent", false, "also check that locked funds are exactly the open reservations (true only while no transfer is in flight)")
	if err := flags.Parse(args); err != nil {
		return config{}, err
	}
	cfg := config{limit: *limit, timeout: *timeout}
	switch {
	case flags.NArg() > 0:
		return cfg, fmt.Errorf("unexpected arguments %q", flags.Args())
	case cfg.limit < 1:
		// LIMIT 0 would report no violation at all.
		return cfg, fmt.Errorf("-limit must be at least 1, got %d", cfg.limit)
	}
	if *quiescent {
		cfg.modes = append(cfg.modes, audit.Quiescent)
	}
	return cfg, nil
}

// report prints each violation and the outcome, and returns the exit
// status: 1 when anything is broken, 0 when all checks passed.
func report(stdout io.Writer, violations []audit.Violation, checks int) int {
	for _, v := range violations {
		fmt.Fprintln(stdout, "VIOLATION", v)
	}
	if len(violations) > 0 {
		fmt.Fprintf(stdout, "ledger-audit: %d violations\n", len(violations))
		return 1
	}
	fmt.Fprintf(stdout, "ledger-audit: %d checks passed\n", checks)
	return 0
}
