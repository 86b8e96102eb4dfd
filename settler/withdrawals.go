package settler

import (
	"context"
	"crypto/ecdsa"
	"log/slog"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/executor"
)

// WithdrawalConfig configures the withdrawal executor, which pays
// debited withdrawal requests on chain and publishes their outcome on
// funding-events. WithdrawalConfigFromEnv reads it.
type WithdrawalConfig struct {
	ChainID int64 // requests of this chain are paid here
	// ChainRPCURL (CHAIN_RPC_URL) is the node the binary pays through;
	// empty: withdrawals are debited but not paid.
	ChainRPCURL string
	Contract    common.Address    // COLLATERAL_CONTRACT
	OperatorKey *ecdsa.PrivateKey // WITHDRAW_OPERATOR_KEY(_FILE): the contract's operator
	// Confirmations (CHAIN_CONFIRMATIONS) is how many blocks must follow
	// a payout's block before it is final.
	Confirmations uint64
	Poll          time.Duration // CHAIN_POLL: the interval between rounds
}

// Executor pays debited withdrawal requests on chain; run it with Run
// beside the settler, which applies what it publishes.
type Executor struct{ e *executor.Executor }

// NewExecutor returns the withdrawal executor paying through chain (an
// ethclient.Client in production). Its metrics go to reg, shared with
// any other executor registered there; nil registers none.
func NewExecutor(cfg WithdrawalConfig, chain executor.Chain, pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger, reg prometheus.Registerer) (*Executor, error) {
	var m *executor.Metrics
	if reg != nil {
		var err error
		if m, err = executor.NewMetrics(reg); err != nil {
			return nil, err
		}
	}
	e, err := executor.New(executor.Config{ChainID: cfg.ChainID, Contract: cfg.Contract, OperatorKey: cfg.OperatorKey,
		Confirmations: cfg.Confirmations, Poll: cfg.Poll, Metrics: m}, chain, pool, cl, log.With("component", "withdrawal-executor"))
	if err != nil {
		return nil, err
	}
	return &Executor{e: e}, nil
}

// Run pays until ctx ends; a failed round is retried at the next poll.
func (x *Executor) Run(ctx context.Context) error { return x.e.Run(ctx) }

// Step handles every open request once: it pays those not yet paid and
// reports those whose payout is final.
func (x *Executor) Step(ctx context.Context) error { return x.e.Step(ctx) }

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
