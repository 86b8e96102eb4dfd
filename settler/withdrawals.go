package settler

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/executor"
)

// ExecutorConfig configures the withdrawal executor.
type ExecutorConfig = executor.Config

// ExecutorChain is the Ethereum client the executor pays through.
type ExecutorChain = executor.Chain

// Executor pays debited withdrawal requests on chain and publishes their
// outcome on funding-events (package executor).
type Executor = executor.Executor

// NewExecutor returns the withdrawal executor; run it with its Run method
// beside the settler, which applies what it publishes.
func NewExecutor(cfg ExecutorConfig, chain ExecutorChain, pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) (*Executor, error) {
	return executor.New(cfg, chain, pool, cl, log.With("component", "withdrawal-executor"))
}

// Audit checks the ledger's invariants on a live database and returns a
// line per violation (at most limit per invariant); none means it holds.
func Audit(ctx context.Context, pool *pgxpool.Pool, limit int) ([]string, error) {
	vs, err := audit.Run(ctx, pool, limit)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out, err
}
