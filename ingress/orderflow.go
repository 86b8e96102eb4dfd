package ingress

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/flow"
	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/ingress/internal/sweep"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka"
	of "blockspace.exchange/platform/orderflow"
)

// OrderflowConfig configures the private-orderflow edges of ingress.
type OrderflowConfig struct {
	Environment environment.Environment
	Product     string // names the EIP-712 domain "<product> Orderflow"
	MaxInFlight int    // concurrent JSON-RPC requests per endpoint before 429
	// DefaultRefundPercent is the originator's share of a backrun's
	// payment when a submission names none (ORDERFLOW_REFUND_PERCENT, 90).
	DefaultRefundPercent int
	// KeyTTL is how long a looked-up API key is trusted (500ms): a revoked
	// key stops working within it.
	KeyTTL time.Duration
	// ChallengeRate limits GET /v1/auth/challenge per client IP
	// (ORDERFLOW_CHALLENGE_RATE_PER_IP / ORDERFLOW_CHALLENGE_BURST_PER_IP,
	// 30/min, 10; rate 0 disables).
	ChallengeRate ratelimit.Rate
	// SubmitRatePerIP and SubmitRatePerSender limit originator submissions
	// per client IP (ORDERFLOW_RATE_PER_IP / ORDERFLOW_BURST_PER_IP,
	// 600/min, 100) and per transaction sender (ORDERFLOW_RATE_PER_SENDER /
	// ORDERFLOW_BURST_PER_SENDER, 60/min, 20); rate 0 disables.
	SubmitRatePerIP, SubmitRatePerSender ratelimit.Rate
	// AccountTTL is how long a sender's balance and nonce read from the
	// chain are used (ORDERFLOW_ACCOUNT_TTL, 2s); MaxNonceGap how far
	// ahead of the account's nonce a transaction's may be
	// (ORDERFLOW_MAX_NONCE_GAP, 64). Only with OrderflowDeps.Chain.
	AccountTTL  time.Duration
	MaxNonceGap int
	// ClientIPHeader is the header a trusted gateway puts the client IP in
	// (AUTH_CLIENT_IP_HEADER); "" = the peer address.
	ClientIPHeader string
	// ChallengeSweep is how often expired challenges are deleted
	// (ORDERFLOW_CHALLENGE_SWEEP, 1m).
	ChallengeSweep time.Duration
}

// OrderflowConfigFromEnv reads ORDERFLOW_* variables.
func OrderflowConfigFromEnv(r *config.Reader, env environment.Environment) OrderflowConfig {
	return OrderflowConfig{
		Environment:          env,
		Product:              r.String("AUTH_PRODUCT", "Blockspace Exchange"),
		MaxInFlight:          httpx.MaxInFlightFromEnv(r),
		DefaultRefundPercent: r.Int("ORDERFLOW_REFUND_PERCENT", 90, 1, 99),
		KeyTTL:               r.Duration("ORDERFLOW_KEY_TTL", of.DefaultKeyTTL, 10*time.Millisecond, time.Second),
		ChallengeRate:        ratelimit.FromEnv(r, "ORDERFLOW_CHALLENGE_RATE_PER_IP", 30, "ORDERFLOW_CHALLENGE_BURST_PER_IP", 10),
		SubmitRatePerIP:      ratelimit.FromEnv(r, "ORDERFLOW_RATE_PER_IP", 600, "ORDERFLOW_BURST_PER_IP", 100),
		SubmitRatePerSender:  ratelimit.FromEnv(r, "ORDERFLOW_RATE_PER_SENDER", 60, "ORDERFLOW_BURST_PER_SENDER", 20),
		AccountTTL:           r.Duration("ORDERFLOW_ACCOUNT_TTL", flow.DefaultFundsTTL, 10*time.Millisecond, time.Minute),
		MaxNonceGap:          r.Int("ORDERFLOW_MAX_NONCE_GAP", flow.DefaultMaxNonceGap, 1, 1<<20),
		ClientIPHeader:       r.String("AUTH_CLIENT_IP_HEADER", ""),
		ChallengeSweep:       r.Duration("ORDERFLOW_CHALLENGE_SWEEP", time.Minute, 10*time.Millisecond, time.Hour),
	}
}

// OrderflowDeps are the resources the caller owns.
type OrderflowDeps struct {
	Pool    *pgxpool.Pool
	Brokers []string
	// KafkaCompression is the codec of produced batches
	// (KAFKA_COMPRESSION, snappy).
	KafkaCompression string
	Logger           *slog.Logger
	Registry         prometheus.Registerer
	// Chain (CHAIN_RPC_URL) is read for the balance and nonce of
	// originator senders; nil checks neither.
	Chain flow.ChainAccounts
}

// Orderflow is the running originator, searcher and account endpoints.
type Orderflow struct {
	originator, searcher, accounts http.Handler
	producer                       *kgo.Client
	challenges                     *of.Challenges
	sweepEvery                     time.Duration
	log                            *slog.Logger
}

// NewOrderflow builds the three orderflow listeners of ingress. Its own
// Kafka producer publishes without linger: a submission is answered only
// after the broker acknowledged it, and searchers wait for it.
func NewOrderflow(cfg OrderflowConfig, deps OrderflowDeps) (*Orderflow, error) {
	producer, err := kafka.NewClient(kafka.Config{Brokers: deps.Brokers, ClientID: "ingress-orderflow", Compression: deps.KafkaCompression}, kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	metrics, err := jsonrpc.NewMetrics(deps.Registry)
	if err != nil {
		producer.Close()
		return nil, fmt.Errorf("orderflow metrics: %w", err)
	}
	submissions, err := of.NewSubmissions(deps.Registry)
	if err != nil {
		producer.Close()
		return nil, fmt.Errorf("orderflow metrics: %w", err)
	}
	// The API-key routes answer in the REST envelope: their refusals
	// count with the REST frame's, as service ingress-orderflow.
	restMetrics, err := httpx.NewMetrics(deps.Registry, "ingress-orderflow")
	if err != nil {
		producer.Close()
		return nil, fmt.Errorf("orderflow metrics: %w", err)
	}
	chainID := big.NewInt(cfg.Environment.ChainID)
	rules := of.Rules{ChainID: chainID}
	keys := of.NewKeys(of.NewKeyStore(deps.Pool), cfg.KeyTTL)
	fc := flow.Config{ChainID: chainID, Rules: rules, DefaultRefundPercent: cfg.DefaultRefundPercent,
		RatePerIP: cfg.SubmitRatePerIP, RatePerSender: cfg.SubmitRatePerSender, ClientIPHeader: cfg.ClientIPHeader,
		Submissions: submissions}
	if deps.Chain != nil {
		fc.Funds = flow.NewFunds(flow.FundsConfig{TTL: cfg.AccountTTL, MaxNonceGap: uint64(cfg.MaxNonceGap)}, deps.Chain, deps.Logger)
	}
	origin := flow.NewOriginators(fc, keys, producer, flow.NewSeen(10*time.Minute))
	search := flow.NewSearchers(keys, of.SearcherMethods{Rules: rules, Producer: producer, Submissions: submissions})
	rpc := func(name string, route func(*http.Request) *jsonrpc.Error, h jsonrpc.HandlerFunc) http.Handler {
		return jsonrpc.Handler(jsonrpc.Config{Service: name, Logger: deps.Logger, Metrics: metrics,
			MaxBody: 4 << 20, MaxInFlight: cfg.MaxInFlight, Route: route}, h)
	}
	challenges := of.NewChallenges(deps.Pool)
	accounts := flow.NewAccounts(flow.AccountsConfig{Product: cfg.Product, ChainID: cfg.Environment.ChainID,
		ChallengeRate: cfg.ChallengeRate, ClientIPHeader: cfg.ClientIPHeader, Metrics: restMetrics}, keys, challenges, deps.Logger)
	sweepEvery := cfg.ChallengeSweep
	if sweepEvery <= 0 {
		sweepEvery = time.Minute
	}
	return &Orderflow{
		originator: rpc("originator", flow.Route, origin.Call),
		searcher:   rpc("searcher", nil, search.Call),
		accounts:   accounts.Handler(),
		producer:   producer,
		challenges: challenges,
		sweepEvery: sweepEvery,
		log:        deps.Logger,
	}, nil
}

// Run deletes expired API-key challenges every ChallengeSweep until ctx
// ends.
func (o *Orderflow) Run(ctx context.Context) error {
	sweep.Every(ctx, o.sweepEvery, "orderflow_challenges", o.challenges.DeleteExpired, o.log)
	return nil
}

// OriginatorHandler serves {originator_url}.
func (o *Orderflow) OriginatorHandler() http.Handler { return o.originator }

// SearcherHandler serves {searcher_url} (HTTP POST).
func (o *Orderflow) SearcherHandler() http.Handler { return o.searcher }

// AccountsHandler serves {orderflow_url}/v1/auth/*.
func (o *Orderflow) AccountsHandler() http.Handler { return o.accounts }

// Close flushes and closes the producer; call it after the listeners
// drained.
func (o *Orderflow) Close(ctx context.Context) {
	_ = o.producer.Flush(ctx)
	o.producer.Close()
}
