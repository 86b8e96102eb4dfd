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
	"blockspace.exchange/ingress/internal/sweep"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka"
	of "blockspace.exchange/platform/orderflow"
)

// OrderflowConfig configures the private-orderflow edges of ingress. The
// EIP-712 domain's product, the in-flight bound and the client IP header
// are the ingress's own (Config.Auth, Config.MaxInFlight).
type OrderflowConfig struct {
	// OriginatorAddr (ORIGINATOR_ADDR, :8081), SearcherAddr
	// (SEARCHER_ADDR, :8082) and AccountsAddr (ORDERFLOW_ADDR, :8083) are
	// the listeners of {originator_url}, {searcher_url} and
	// {orderflow_url}.
	OriginatorAddr, SearcherAddr, AccountsAddr string
	// DefaultRefundPercent is the originator's share of a backrun's
	// payment when a submission names none (ORDERFLOW_REFUND_PERCENT, 90,
	// 1 to 99).
	DefaultRefundPercent int
	// KeyTTL is how long a looked-up API key is trusted
	// (ORDERFLOW_KEY_TTL, 500ms, 10ms to 1s): a revoked key stops working
	// within it.
	KeyTTL time.Duration
	// ChallengeRate limits GET /v1/auth/challenge per client IP
	// (ORDERFLOW_CHALLENGE_RATE_PER_IP / ORDERFLOW_CHALLENGE_BURST_PER_IP,
	// 30/min, 10; rate 0 disables).
	ChallengeRate Rate
	// SubmitRatePerIP and SubmitRatePerSender limit originator submissions
	// per client IP (ORDERFLOW_RATE_PER_IP / ORDERFLOW_BURST_PER_IP,
	// 600/min, 100) and per transaction sender (ORDERFLOW_RATE_PER_SENDER /
	// ORDERFLOW_BURST_PER_SENDER, 60/min, 20); rate 0 disables.
	SubmitRatePerIP, SubmitRatePerSender Rate
	// AccountTTL is how long a sender's balance and nonce read from the
	// chain are used (ORDERFLOW_ACCOUNT_TTL, 2s, 10ms to 1m); MaxNonceGap
	// how far ahead of the account's nonce a transaction's may be
	// (ORDERFLOW_MAX_NONCE_GAP, 64, 1 to 2^20). Only with
	// OrderflowDeps.Chain.
	AccountTTL  time.Duration
	MaxNonceGap int
	// ChallengeSweep is how often expired challenges are deleted
	// (ORDERFLOW_CHALLENGE_SWEEP, 1m, 10ms to 1h).
	ChallengeSweep time.Duration
}

// defaultOrderflow is OrderflowConfig with no variable set.
func defaultOrderflow() OrderflowConfig {
	return OrderflowConfig{
		OriginatorAddr: ":8081", SearcherAddr: ":8082", AccountsAddr: ":8083",
		DefaultRefundPercent: 90,
		KeyTTL:               of.DefaultKeyTTL,
		ChallengeRate:        Rate{PerMinute: 30, Burst: 10},
		SubmitRatePerIP:      Rate{PerMinute: 600, Burst: 100},
		SubmitRatePerSender:  Rate{PerMinute: 60, Burst: 20},
		AccountTTL:           flow.DefaultFundsTTL,
		MaxNonceGap:          flow.DefaultMaxNonceGap,
		ChallengeSweep:       time.Minute,
	}
}

// fromEnv reads the listeners' addresses and the ORDERFLOW_* variables
// over o.
func (o OrderflowConfig) fromEnv(r *config.Reader) OrderflowConfig {
	o.OriginatorAddr = r.String("ORIGINATOR_ADDR", o.OriginatorAddr)
	o.SearcherAddr = r.String("SEARCHER_ADDR", o.SearcherAddr)
	o.AccountsAddr = r.String("ORDERFLOW_ADDR", o.AccountsAddr)
	o.DefaultRefundPercent = r.Int("ORDERFLOW_REFUND_PERCENT", o.DefaultRefundPercent, 1, 99)
	o.KeyTTL = r.Duration("ORDERFLOW_KEY_TTL", o.KeyTTL, 10*time.Millisecond, time.Second)
	o.ChallengeRate = o.ChallengeRate.fromEnv(r, "ORDERFLOW_CHALLENGE_RATE_PER_IP", "ORDERFLOW_CHALLENGE_BURST_PER_IP")
	o.SubmitRatePerIP = o.SubmitRatePerIP.fromEnv(r, "ORDERFLOW_RATE_PER_IP", "ORDERFLOW_BURST_PER_IP")
	o.SubmitRatePerSender = o.SubmitRatePerSender.fromEnv(r, "ORDERFLOW_RATE_PER_SENDER", "ORDERFLOW_BURST_PER_SENDER")
	o.AccountTTL = r.Duration("ORDERFLOW_ACCOUNT_TTL", o.AccountTTL, 10*time.Millisecond, time.Minute)
	o.MaxNonceGap = r.Int("ORDERFLOW_MAX_NONCE_GAP", o.MaxNonceGap, 1, 1<<20)
	o.ChallengeSweep = r.Duration("ORDERFLOW_CHALLENGE_SWEEP", o.ChallengeSweep, 10*time.Millisecond, time.Hour)
	return o
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

// NewOrderflow builds the three orderflow listeners of ingress from
// cfg.Orderflow, in cfg's environment. Its own Kafka producer publishes
// without linger: a submission is answered only after the broker
// acknowledged it, and searchers wait for it.
func NewOrderflow(icfg Config, deps OrderflowDeps) (*Orderflow, error) {
	cfg := icfg.Orderflow
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
	chainID := big.NewInt(icfg.Environment.ChainID)
	rules := of.Rules{ChainID: chainID}
	keys := of.NewKeys(of.NewKeyStore(deps.Pool), cfg.KeyTTL)
	fc := flow.Config{ChainID: chainID, Rules: rules, DefaultRefundPercent: cfg.DefaultRefundPercent,
		RatePerIP: cfg.SubmitRatePerIP.limit(), RatePerSender: cfg.SubmitRatePerSender.limit(), ClientIPHeader: icfg.Auth.ClientIPHeader,
		Submissions: submissions}
	if deps.Chain != nil {
		fc.Funds = flow.NewFunds(flow.FundsConfig{TTL: cfg.AccountTTL, MaxNonceGap: uint64(cfg.MaxNonceGap)}, deps.Chain, deps.Logger)
	}
	origin := flow.NewOriginators(fc, keys, producer, flow.NewSeen(10*time.Minute))
	search := flow.NewSearchers(keys, of.SearcherMethods{Rules: rules, Producer: producer, Submissions: submissions})
	rpc := func(name string, route func(*http.Request) *jsonrpc.Error, h jsonrpc.HandlerFunc) http.Handler {
		return jsonrpc.Handler(jsonrpc.Config{Service: name, Logger: deps.Logger, Metrics: metrics,
			MaxBody: 4 << 20, MaxInFlight: icfg.MaxInFlight, Route: route}, h)
	}
	challenges := of.NewChallenges(deps.Pool)
	accounts := flow.NewAccounts(flow.AccountsConfig{Product: icfg.Auth.Product, ChainID: icfg.Environment.ChainID,
		ChallengeRate: cfg.ChallengeRate.limit(), ClientIPHeader: icfg.Auth.ClientIPHeader, Metrics: restMetrics}, keys, challenges, deps.Logger)
	sweepEvery := cfg.ChallengeSweep
	if sweepEvery <= 0 {
		sweepEvery = defaultOrderflow().ChallengeSweep
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
