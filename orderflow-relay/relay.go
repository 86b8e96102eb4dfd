// Package relay is the orderflow relay: it fans decoded originator
// transactions out to searcher WebSockets, takes searcher bundles over the
// same sockets, forwards bundles to builders, and follows the chain for
// inclusion and refunds. Several instances can run: each serves its own
// sockets from the topics, forwarding is shared by a consumer group, one
// at a time applies blocks (an advisory lock), and refunds are claimed
// and their payouts stored in Postgres before they are sent.
package relay

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/orderflow-relay/internal/builders"
	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/orderflow-relay/internal/stream"
	"blockspace.exchange/platform/kafka"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/outbox"
)

// Config is the relay's configuration; ConfigFromEnv reads it and names
// each field's variable and default.
type Config struct {
	Addr        string // SEARCHER_WS_ADDR: the searcher WebSocket listener
	ChainID     *big.Int
	BuilderURLs []string          // BUILDER_URLS: eth_sendBundle endpoints
	PayerKey    *ecdsa.PrivateKey // REFUND_PAYER_KEY: pays refunds; nil leaves them pending
	KeyTTL      time.Duration     // ORDERFLOW_KEY_TTL: how long a looked-up API key is trusted
	// SocketsPerKey (SEARCHER_SOCKETS_PER_KEY) and MaxSockets
	// (SEARCHER_SOCKETS_MAX) bound the open searcher sockets of one API
	// key and of the relay.
	SocketsPerKey, MaxSockets int
	BuilderBatch              int           // BUILDER_BATCH: bundles per request to a builder
	BackrunWait               time.Duration // BACKRUN_WAIT: how long a backrun waits for its originator transaction
	BuilderRetry              time.Duration // BUILDER_RETRY: how long a refused send is tried again
	BuilderGroup              string        // ORDERFLOW_RELAY_GROUP: the forwarding instances' consumer group
	// ChainRPCURL (CHAIN_RPC_URL) is the node New dials when Deps.Chain
	// is nil; empty with no Deps.Chain: no inclusion tracking or refunds.
	ChainRPCURL string
	ChainPoll   time.Duration // CHAIN_POLL: how often the chain head is read
	// RefundConfirmations (REFUND_CONFIRMATIONS) is how many blocks
	// must follow a backrun's block before its refund is paid: a
	// reorganisation at most that deep withdraws the refunds of the
	// orphaned blocks before anything is paid.
	RefundConfirmations uint64
}

// Deps are what the caller owns.
type Deps struct {
	Pool    *pgxpool.Pool
	Brokers []string
	// KafkaCompression is the codec of produced batches
	// (KAFKA_COMPRESSION, snappy).
	KafkaCompression string
	// Chain is the node the relay follows; nil dials Config.ChainRPCURL.
	Chain  inclusions.Chain
	Logger *slog.Logger
	// Registry takes the relay's metrics; several relays may share one.
	// nil registers none.
	Registry prometheus.Registerer
	// OutboxMetrics, when set, counts the outbox relay's rounds; register
	// it once per registry (outbox.NewMetrics).
	OutboxMetrics *outbox.Metrics
}

// Service is a running relay.
type Service struct {
	cfg      Config
	deps     Deps
	hub      *stream.Hub
	ws       *stream.Server
	producer *kgo.Client
	out      *outbox.Outbox
	feedCl   *kgo.Client
	fwd      *builders.Forwarder
	fwdCl    *kgo.Client
	metrics  metrics
	// feedLag and fwdLag are the consumer lag of the searcher feed and
	// the forwarder, counted by hooks of their clients: both loops apply
	// what a poll returned before they poll again.
	feedLag, fwdLag *kafka.Lag
}

// metrics are the relay's metric sets, one per part.
type metrics struct {
	stream      *stream.Metrics
	forward     *builders.Metrics
	chain       *inclusions.Metrics
	submissions *of.Submissions
}

func newMetrics(reg prometheus.Registerer) (m metrics, err error) {
	if m.stream, err = stream.NewMetrics(reg); err != nil {
		return m, err
	}
	if m.forward, err = builders.NewMetrics(reg); err != nil {
		return m, err
	}
	if m.chain, err = inclusions.NewMetrics(reg); err != nil {
		return m, err
	}
	m.submissions, err = of.NewSubmissions(reg)
	return m, err
}

// New builds the relay and its Kafka clients. The searcher stream starts
// at the orderflow topics' end offsets as of this call: every submission
// acknowledged after New returns reaches the sockets.
func New(ctx context.Context, cfg Config, deps Deps) (*Service, error) {
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("orderflow relay metrics: %w", err)
	}
	if deps.Chain == nil && cfg.ChainRPCURL != "" {
		cl, err := ethclient.DialContext(ctx, cfg.ChainRPCURL)
		if err != nil {
			return nil, fmt.Errorf("CHAIN_RPC_URL: %w", err)
		}
		deps.Chain = cl
	}
	s := &Service{cfg: cfg, deps: deps, hub: stream.NewHub(m.stream), metrics: m}
	if s.producer, err = kafka.NewClient(kafka.Config{Brokers: deps.Brokers, ClientID: "orderflow-relay", Compression: deps.KafkaCompression}, kgo.ProducerLinger(0)); err != nil {
		return nil, err
	}
	ends, err := stream.StartOffsets(ctx, kadm.NewClient(s.producer))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.feedLag = kafka.NewLag("orderflow-relay-feed") // a reader in no group: its client id
	for topic, parts := range ends {
		for p, end := range parts {
			s.feedLag.Position(topic, p, end)
		}
	}
	feedOpts := append(stream.ClientOpts(ends), kgo.WithHooks(s.feedLag.Hook()))
	if s.feedCl, err = kafka.NewClient(kafka.Config{Brokers: deps.Brokers, ClientID: "orderflow-relay-feed", Compression: deps.KafkaCompression}, feedOpts...); err != nil {
		s.Close()
		return nil, err
	}
	s.feedLag.ListWith(s.feedCl)
	s.out = outbox.New(deps.Pool, s.producer, deps.Logger.With("component", "outbox"))
	s.out.Metrics = deps.OutboxMetrics
	fwdCfg := builders.Config{Group: cfg.BuilderGroup, Batch: cfg.BuilderBatch, BackrunWait: cfg.BackrunWait, RetryFor: cfg.BuilderRetry, Metrics: m.forward}
	s.fwd = builders.NewForwarder(fwdCfg, deps.Pool, cfg.BuilderURLs, s.out, deps.Logger)
	s.fwdLag = kafka.NewLag(s.fwd.Group())
	fwdOpts := append(s.fwd.ClientOpts(), kgo.WithHooks(s.fwdLag.Hook()))
	if s.fwdCl, err = kafka.NewClient(kafka.Config{Brokers: deps.Brokers, ClientID: "orderflow-relay-builders", Compression: deps.KafkaCompression}, fwdOpts...); err != nil {
		s.Close()
		return nil, err
	}
	s.fwdLag.ListWith(s.fwdCl)
	s.fwdLag.FollowGroup(s.fwdCl) // its revoke callbacks are the forwarder's
	keys := of.NewKeys(of.NewKeyStore(deps.Pool), cfg.KeyTTL)
	methods := of.SearcherMethods{Rules: of.Rules{ChainID: cfg.ChainID}, Producer: s.producer, Submissions: m.submissions}
	s.ws = stream.NewServer(stream.Config{SocketsPerKey: cfg.SocketsPerKey, MaxSockets: cfg.MaxSockets}, s.hub, keys, methods, deps.Logger)
	return s, nil
}

// RegisterMetrics adds the lag of the relay's consumers to reg.
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	for _, l := range []*kafka.Lag{s.feedLag, s.fwdLag} {
		if err := reg.Register(l); err != nil {
			return fmt.Errorf("orderflow relay: register metrics: %w", err)
		}
	}
	return nil
}

// Handler is the searcher WebSocket endpoint.
func (s *Service) Handler() http.Handler { return s.ws }

// Sockets is the number of open searcher sockets.
func (s *Service) Sockets() int { return s.hub.Len() }

// Run runs the feed, the forwarder, the key re-checks, the chain watcher
// and the outbox relay until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	log := s.deps.Logger
	wg.Go(func() { _ = stream.NewFeed(s.hub, log).Run(ctx, s.feedCl) })
	wg.Go(func() { _ = s.ws.Run(ctx) })
	wg.Go(func() { _ = s.fwd.Run(ctx, s.fwdCl) })
	// The forwarder and the chain watcher keep their events in the
	// outbox; its relay delivers what a crash or a Kafka outage left
	// there.
	wg.Go(func() { s.out.Run(ctx, outbox.DefaultRelayEvery) })
	if s.deps.Chain != nil {
		w := inclusions.New(inclusions.Config{ChainID: s.cfg.ChainID, PayerKey: s.cfg.PayerKey, Poll: s.cfg.ChainPoll,
			RefundConfirmations: s.cfg.RefundConfirmations, Metrics: s.metrics.chain}, s.deps.Chain, s.deps.Pool, s.out, log)
		wg.Go(func() { _ = w.Run(ctx) })
	}
	wg.Wait()
	return nil
}

// ForgetChain drops the chain watcher's cursor on chain chainID and the
// refunds not confirmed on it, for a chain replaced by a new one (the dev
// chain starts empty at every start). See inclusions.Forget.
func ForgetChain(ctx context.Context, pool *pgxpool.Pool, chainID *big.Int) error {
	return inclusions.Forget(ctx, pool, chainID)
}

// Close flushes and closes the Kafka clients.
func (s *Service) Close() {
	for _, cl := range []*kgo.Client{s.feedCl, s.fwdCl} {
		if cl != nil {
			cl.Close()
		}
	}
	if s.producer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.producer.Flush(ctx)
		cancel()
		s.producer.Close()
	}
}
