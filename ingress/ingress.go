// Package ingress is where every outside event enters the log: REST
// mutations, orderflow JSON-RPC, the slot clock and the chain watchers.
// Each accepted command is published to its Kafka topic.
package ingress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"blockspace.exchange/ingress/internal/deposits"
	"blockspace.exchange/ingress/internal/funding"
	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/ingress/internal/orderentry"
	"blockspace.exchange/ingress/internal/sweep"
	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/auth"
	pchain "blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/outbox"
)

// Deps are the resources the caller owns and shares.
type Deps struct {
	Pool    *pgxpool.Pool
	Logger  *slog.Logger
	Metrics *httpx.Metrics
	DBErr   func() error // Postgres reachability, for 503 on routes that need it
	// Kafka publishes commands (transfers, withdrawals, orders) and
	// reaches the brokers the market catalog is read from; KafkaErr is its
	// reachability. Without Kafka the funding and order routes are not
	// served.
	Kafka    *kgo.Client
	KafkaErr func() error
	// Registry takes the metrics of the deposit watcher; nil registers
	// none.
	Registry prometheus.Registerer
	// OutboxMetrics, when set, counts the outbox relay's rounds; register
	// it once per registry (outbox.NewMetrics).
	OutboxMetrics *outbox.Metrics
}

// Service is a running ingress.
type Service struct {
	cfg      Config
	engine   *gin.Engine
	verifier *auth.Verifier
	logins   *login.Service
	log      *slog.Logger
	outbox   *outbox.Outbox
	orders   *orderentry.Service
}

// New builds the ingress REST frame. The frame knows the whole interface,
// so a method sent here for a path that query-api serves is answered
// with 400, as the interface requires. It publishes the access-token
// signing key in Postgres before serving, so that every verifier knows it
// before the first token exists.
func New(ctx context.Context, cfg Config, deps Deps) (*Service, error) {
	if cfg.Auth.SigningKey == nil {
		return nil, errors.New("ingress: no access-token signing key configured (AUTH_SIGNING_KEY_FILE or AUTH_SIGNING_KEY)")
	}
	engine, err := httpx.NewEngine(httpx.Config{
		Service: "ingress", Logger: deps.Logger, Metrics: deps.Metrics,
		MaxInFlight: cfg.MaxInFlight, DBPool: deps.Pool, Routes: api.MustRoutes(),
		// Orders wait in the group-commit lanes, which hold their
		// connections by design; MaxInFlight bounds them.
		QueuedRoutes: orderentry.PlaceRoutes(),
	})
	if err != nil {
		return nil, err
	}
	kid, err := auth.PublishKey(ctx, deps.Pool, &cfg.Auth.SigningKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("ingress: %w", err)
	}
	verifier := auth.NewVerifier(auth.VerifierConfig{Keys: auth.PostgresKeys(deps.Pool), Revoked: auth.PostgresRevocations(deps.Pool), Logger: deps.Logger})
	if err := verifier.Reload(ctx); err != nil {
		return nil, fmt.Errorf("ingress: %w", err)
	}
	a := cfg.Auth
	logins := login.New(login.Config{
		Product: a.Product, ChainID: cfg.Environment.ChainID, Host: a.LoginHost,
		NonceTTL: a.NonceTTL, SessionTTL: a.SessionTTL,
		RatePerAddress: a.RatePerAddress.limit(), RatePerIP: a.RatePerIP.limit(), ClientIPHeader: a.ClientIPHeader,
	}, deps.Pool, login.NewSigner(a.SigningKey, kid, a.AccessTTL))
	logins.Register(engine, auth.Bearer(verifier), httpx.Needs("postgres", deps.DBErr))
	deps.Logger.Info("access tokens signed", "kid", kid)
	svc := &Service{cfg: cfg, engine: engine, verifier: verifier, logins: logins, log: deps.Logger}
	if deps.Kafka != nil {
		kafkaErr := deps.KafkaErr
		if kafkaErr == nil {
			kafkaErr = func() error { return nil }
		}
		svc.outbox = cfg.Outbox.build(deps)
		needs := []gin.HandlerFunc{httpx.Needs("postgres", deps.DBErr), httpx.Needs("kafka", kafkaErr)}
		funding.New(funding.Config{WithdrawChains: []int64{cfg.Environment.ChainID}}, deps.Pool, svc.outbox).
			Register(engine, auth.Bearer(verifier), needs...)
		svc.orders, err = orderentry.New(cfg.Orders.entry(cfg.Environment), deps.Pool, deps.Kafka, svc.outbox, deps.Logger.With("component", "orders"))
		if err != nil {
			return nil, fmt.Errorf("ingress: %w", err)
		}
		svc.orders.Register(engine, auth.Bearer(verifier), needs...)
	}
	return svc, nil
}

// RegisterMetrics adds the lag of the market catalog's feed, when the
// service takes orders, to reg; the request and outbox metrics come with
// Deps.
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	if s.orders == nil {
		return nil
	}
	if err := reg.Register(s.orders.Lag()); err != nil {
		return fmt.Errorf("ingress: register metrics: %w", err)
	}
	return nil
}

// DepositWatcher returns the chain watcher of the collateral contract's
// deposits on chainID, publishing with deps.Kafka and registering its
// metrics on deps.Registry.
func DepositWatcher(chainID int64, cfg DepositsConfig, chain deposits.Chain, deps Deps) (*Watcher, error) {
	m, err := pchain.NewWatcherMetrics(deps.Registry, pchain.WatcherDeposits)
	if err != nil {
		return nil, fmt.Errorf("deposit watcher metrics: %w", err)
	}
	w, err := deposits.New(deposits.Config{
		ChainID: chainID, Contract: cfg.Contract, Confirmations: cfg.Confirmations, StartBlock: cfg.StartBlock,
		Poll: cfg.Poll, Instance: cfg.Instance, Metrics: m,
	}, chain, deps.Pool, deps.Kafka, deps.Logger.With("component", "chain-watcher"))
	if err != nil {
		return nil, err
	}
	return &Watcher{w: w}, nil
}

// Watcher is a running deposit watcher.
type Watcher struct{ w *deposits.Watcher }

// Run credits deposits as they become final until ctx ends.
func (w *Watcher) Run(ctx context.Context) error { return w.w.Run(ctx) }

// Run keeps the verification keys fresh, deletes expired login
// challenges, relays unpublished commands and follows the markets of the
// log until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if s.outbox != nil {
		g.Go(func() error { s.outbox.Run(ctx, s.cfg.Outbox.relayEvery()); return nil })
	}
	if s.orders != nil {
		g.Go(func() error { return s.orders.Run(ctx) })
	}
	g.Go(func() error { s.verifier.Run(ctx, s.cfg.Auth.KeysRefresh); return nil })
	g.Go(func() error {
		sweep.Every(ctx, s.nonceSweep(), "login_nonces", s.logins.DeleteExpiredNonces, s.log)
		return nil
	})
	return g.Wait()
}

// nonceSweep is AUTH_NONCE_SWEEP, its default when zero.
func (s *Service) nonceSweep() time.Duration {
	if s.cfg.Auth.NonceSweep <= 0 {
		return defaultAuth().NonceSweep
	}
	return s.cfg.Auth.NonceSweep
}

// Handler is the REST handler of the service.
func (s *Service) Handler() http.Handler { return s.engine }

// Routes lists the routes the service serves, in the interface's syntax.
func (s *Service) Routes() []httpx.Route {
	var out []httpx.Route
	for _, r := range s.engine.Routes() {
		out = append(out, httpx.Route{Method: r.Method, Path: httpx.TemplatePath(r.Path)})
	}
	return out
}
