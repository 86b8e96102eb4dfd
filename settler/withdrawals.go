package settler

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
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

// ExecutorMetrics are the executor's metrics (ExecutorConfig.Metrics).
type ExecutorMetrics = executor.Metrics

// NewExecutorMetrics registers the executor's metrics on reg, or reuses
// those registered there by another executor.
func NewExecutorMetrics(reg prometheus.Registerer) (*ExecutorMetrics, error) {
	return executor.NewMetrics(reg)
}

// NewExecutor returns the withdrawal executor; run it with its Run method
// beside the settler, which applies what it publishes.
func NewExecutor(cfg ExecutorConfig, chain ExecutorChain, pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) (*Executor, error) {
	return executor.New(cfg, chain, pool, cl, log.With("component", "withdrawal-executor"))
}

// Audit checks the ledger's invariants on a live database and returns a
// line per violation (at most limit per invariant); none means it holds.
func Audit(ctx context.Context, pool *pgxpool.Pool, limit int) ([]string, error) {
	return runAudit(ctx, pool, limit)
}

// AuditQuiescent is Audit with the checks that hold only on a quiet
// system (ledger-audit -quiescent): with no transfer in flight, every
// user account locks exactly what its open buy orders and withdrawal
// requests hold.
func AuditQuiescent(ctx context.Context, pool *pgxpool.Pool, limit int) ([]string, error) {
	return runAudit(ctx, pool, limit, audit.Quiescent)
}

func runAudit(ctx context.Context, pool *pgxpool.Pool, limit int, modes ...audit.Mode) ([]string, error) {
	vs, err := audit.Run(ctx, pool, limit, modes...)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out, err
}
