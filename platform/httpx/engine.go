package httpx

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/topics"
)

// Config configures the frame of one service.
type Config struct {
	Service      string       // name in logs and metrics, e.g. "query-api"
	Logger       *slog.Logger // required
	Metrics      *Metrics     // nil: no request metrics
	MaxInFlight  int          // concurrent requests before 429; default DefaultMaxInFlight
	MaxBodyBytes int64        // request body cap; default 1 MiB
	// BodyTimeout is how long a request's body may take to arrive, from
	// when its handler chain starts; default 10s. Bodies are read whole
	// before MaxInFlight counts the request.
	BodyTimeout   time.Duration
	DBPool        *pgxpool.Pool // nil: no database-pressure check
	DBQueueFactor int           // requests waiting per pool connection before 429; default 4
	// QueuedRoutes are route paths (as registered, e.g.
	// "/api/v1/wholeblock/order") whose requests wait in a batch writer's
	// queue instead of each taking a pool connection: its connections are
	// busy by design, so the database-pressure check passes over them.
	// MaxInFlight still counts them.
	QueuedRoutes []string
	Routes       []Route // the whole REST interface, for 400 on a known path with another method
}

func (c *Config) applyDefaults() error {
	if c.Logger == nil {
		return fmt.Errorf("httpx: Logger is required")
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = 10 * time.Second
	}
	if c.DBQueueFactor <= 0 {
		c.DBQueueFactor = 4
	}
	return nil
}

// NewEngine returns a gin engine with the frame's middleware in order:
// request id first (so every answer carries it), then observation, error
// rendering, panic recovery, the body (capped and read whole, so that a
// slow sender is not counted as in flight), then load shedding. Routes are
// added by the service.
func NewEngine(cfg Config) (*gin.Engine, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	e.RedirectTrailingSlash = false
	lim := newLimiter(cfg.MaxInFlight, cfg.DBPool, cfg.DBQueueFactor, cfg.QueuedRoutes)
	e.Use(
		requestIDMiddleware(newIDSource()),
		observe(cfg.Logger.With("service", cfg.Service), cfg.Metrics),
		renderErrors(),
		recoverPanics(),
		readBody(cfg.MaxBodyBytes, cfg.BodyTimeout),
		lim.middleware(),
	)
	table := newRouteTable(cfg.Routes)
	e.NoMethod(func(c *gin.Context) { methodNotAllowed(c, table) })
	e.NoRoute(func(c *gin.Context) { methodNotAllowed(c, table) })
	return e, nil
}

// methodNotAllowed answers 400 for a path of the interface used with a
// method it does not define (the interface's rule, not 405), and 404 for a
// path the interface does not have.
func methodNotAllowed(c *gin.Context, t routeTable) {
	path := c.Request.URL.Path
	if allowed := t.allowed(path); allowed != nil {
		Fail(c, Invalid("method %s is not supported on %s; use %s", c.Request.Method, path, strings.Join(allowed, " or ")))
		return
	}
	Fail(c, &Error{Status: http.StatusNotFound, Code: topics.CodeValidation, Key: "error.notFound", Message: "no such path: " + path})
}
