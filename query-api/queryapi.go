// Package queryapi is the read side of the REST interface: public
// reference and market data and the user's own reads, served from
// Postgres read models and caches.
package queryapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/query-api/internal/board"
	"blockspace.exchange/query-api/internal/funding"
	"blockspace.exchange/query-api/internal/live"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/query-api/internal/reference"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/query-api/internal/user"
	"blockspace.exchange/query-api/internal/validators"
)

// Config is the query-api's own configuration.
type Config struct {
	// Addr (HTTP_ADDR) and OrderflowAddr (ORDERFLOW_ADDR) are the REST
	// and the orderflow tracking listeners of the binary.
	Addr, OrderflowAddr string
	Environment         environment.Environment
	CollateralContract  string        // deposit contract of the environment's chain; "" keeps the stored one
	ReferenceRefresh    time.Duration // how often reference data is reloaded
	MaxInFlight         int           // concurrent requests before 429
	KeysRefresh         time.Duration // how often access-token keys are reloaded (30s)
	UserCacheTTL        time.Duration // longest a cached profile is served without a change notice (2s)
	// Kafka feeds the in-memory market model (public market reads) from
	// the orders, order-events and fills topics; without brokers the
	// market reads answer empty lists. The client id defaults to
	// query-api-markets.
	Kafka kafka.Config
	// Live tunes the WebSocket at /ws (docs/websocket.md).
	Live live.Config
}

// Deps are the resources the caller owns and shares.
type Deps struct {
	Pool    *pgxpool.Pool
	Logger  *slog.Logger
	Metrics *httpx.Metrics
	// DBErr reports whether Postgres is reachable (a health monitor's
	// last probe); routes that need it answer 503 while it is not.
	DBErr func() error
}

// Service is a running query-api.
type Service struct {
	cfg     Config
	engine  *gin.Engine
	ref     *reference.Cache
	keys    *auth.Verifier
	users   *user.Reads
	reads   *tradingreads.Reads
	candles *tradingreads.Candles
	feed    *markets.Feed
	// live is the WebSocket at /ws; accounts feeds its private channels.
	live     *live.Server
	accounts *live.AccountFeed
}

// contractAddress is the form of an Ethereum address that clients are
// told to deposit to.
var contractAddress = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)

// New builds the service and loads what it serves; it fails when
// Postgres cannot be read, so a process is not ready with empty caches.
func New(ctx context.Context, cfg Config, deps Deps) (*Service, error) {
	if cfg.CollateralContract != "" && !contractAddress.MatchString(cfg.CollateralContract) {
		return nil, fmt.Errorf("COLLATERAL_CONTRACT=%q: want the collateral contract's address, 0x and 40 hex digits", cfg.CollateralContract)
	}
	if cfg.KeysRefresh <= 0 {
		cfg.KeysRefresh = 30 * time.Second
	}
	if cfg.UserCacheTTL <= 0 {
		cfg.UserCacheTTL = 2 * time.Second
	}
	if cfg.ReferenceRefresh <= 0 {
		cfg.ReferenceRefresh = DefaultReferenceRefresh
	}
	if cfg.Kafka.ClientID == "" {
		cfg.Kafka.ClientID = "query-api-markets"
	}
	engine, err := httpx.NewEngine(httpx.Config{
		Service: "query-api", Logger: deps.Logger, Metrics: deps.Metrics,
		MaxInFlight: cfg.MaxInFlight, DBPool: deps.Pool, Routes: api.MustRoutes(),
	})
	if err != nil {
		return nil, err
	}
	if err := reference.SetCollateralContract(ctx, deps.Pool, cfg.Environment.ChainID, cfg.CollateralContract); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, engine: engine, ref: reference.NewCache(deps.Pool, cfg.Environment.ChainID, deps.Logger)}
	if err := s.ref.Reload(ctx); err != nil {
		return nil, fmt.Errorf("query-api: %w", err)
	}
	needsDB := httpx.Needs("postgres", deps.DBErr)
	s.ref.Register(engine, needsDB)
	s.keys = auth.NewVerifier(auth.VerifierConfig{Keys: auth.PostgresKeys(deps.Pool), Revoked: auth.PostgresRevocations(deps.Pool), Logger: deps.Logger})
	if err := s.keys.Reload(ctx); err != nil {
		return nil, fmt.Errorf("query-api: %w", err)
	}
	s.users = user.New(deps.Pool, deps.Logger, cfg.UserCacheTTL)
	s.users.Register(engine, auth.Bearer(s.keys), needsDB)
	funding.New(deps.Pool, cfg.Environment.ChainID).Register(engine, auth.Bearer(s.keys), needsDB)
	validators.Register(engine, deps.Pool, auth.Bearer(s.keys), needsDB)
	s.reads = tradingreads.New(deps.Pool)
	s.reads.Register(engine, auth.Bearer(s.keys), needsDB)
	s.candles = tradingreads.NewCandles(deps.Pool, cfg.Environment)
	s.candles.Register(engine, needsDB)
	model, err := s.serveMarkets(engine, deps.Logger)
	if err != nil {
		return nil, err
	}
	if err := s.serveLive(model, deps, deps.Logger); err != nil {
		return nil, err
	}
	board.Register(engine)
	engine.GET("/.well-known/jwks.json", s.jwks)
	engine.GET("/api/v1/openapi.yaml", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/yaml", api.OpenAPI)
	})
	return s, nil
}

// Handler is the REST handler of the service, with the WebSocket at /ws.
func (s *Service) Handler() http.Handler { return s.handler() }

// RegisterMetrics adds the lag of the service's Kafka feeds (the market
// feed and the account feed, when it reads Kafka) to reg; the request
// metrics come with Deps.Metrics.
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	var lags []*kafka.Lag
	if s.feed != nil {
		lags = append(lags, s.feed.Lag())
	}
	if s.accounts != nil {
		lags = append(lags, s.accounts.Lag())
	}
	for _, l := range lags {
		if err := reg.Register(l); err != nil {
			return fmt.Errorf("query-api: register metrics: %w", err)
		}
	}
	return nil
}

// Routes lists the routes the service serves, in the interface's syntax.
func (s *Service) Routes() []httpx.Route { return append(engineRoutes(s.engine), liveRoute) }

// Run keeps caches and keys fresh until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.keys.Run(ctx, s.cfg.KeysRefresh) })
	wg.Go(func() { s.users.Run(ctx) })
	if s.feed != nil {
		wg.Go(func() { _ = s.feed.Run(ctx) })
	}
	wg.Go(func() { _ = s.live.Run(ctx) })
	if s.accounts != nil {
		wg.Go(func() { _ = s.accounts.Run(ctx) })
	}
	s.ref.Run(ctx, s.cfg.ReferenceRefresh)
	wg.Wait()
	return nil
}

// jwks publishes the keys that verify access tokens (RFC 7517), for
// clients and other services that check tokens themselves.
func (s *Service) jwks(c *gin.Context) {
	body, err := s.keys.Keys().JWKS()
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "public, max-age=60")
	c.Data(http.StatusOK, "application/json", body)
}

func engineRoutes(e *gin.Engine) []httpx.Route {
	var out []httpx.Route
	for _, r := range e.Routes() {
		out = append(out, httpx.Route{Method: r.Method, Path: httpx.TemplatePath(r.Path)})
	}
	return out
}
