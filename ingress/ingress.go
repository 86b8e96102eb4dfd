// Package ingress is where every outside event enters the log: REST
// mutations, orderflow JSON-RPC, the slot clock and the chain watchers.
// Each accepted command is published to its Kafka topic.
package ingress

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
)

// Config is the ingress's own configuration.
type Config struct {
	Environment environment.Environment
	MaxInFlight int // concurrent requests before 429
}

// Deps are the resources the caller owns and shares.
type Deps struct {
	Pool    *pgxpool.Pool
	Logger  *slog.Logger
	Metrics *httpx.Metrics
	DBErr   func() error // Postgres reachability, for 503 on routes that need it
}

// Service is a running ingress.
type Service struct {
	engine *gin.Engine
}

// New builds the ingress REST frame. The frame knows the whole interface,
// so a method sent here for a path that query-api serves is answered
// with 400, as the interface requires.
func New(cfg Config, deps Deps) (*Service, error) {
	engine, err := httpx.NewEngine(httpx.Config{
		Service: "ingress", Logger: deps.Logger, Metrics: deps.Metrics,
		MaxInFlight: cfg.MaxInFlight, DBPool: deps.Pool, Routes: api.MustRoutes(),
	})
	if err != nil {
		return nil, err
	}
	return &Service{engine: engine}, nil
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
