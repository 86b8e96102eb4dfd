package postgres

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool defaults. A connection costs the server a process, and per-request
// transactions are the ceiling the services are built around
// (docs/operations.md "Database connections"), so more connections than a
// few per core only add contention.
const (
	minDefaultConns       = 4
	maxDefaultConns       = 32
	defaultConnectTimeout = 5 * time.Second
	defaultMaxIdleTime    = 5 * time.Minute
	defaultMaxLifetime    = time.Hour
)

// Options tune a pool. Zero fields take the URL's pool_* or connect_timeout
// parameter when it has one, and our default otherwise.
type Options struct {
	// MaxConns caps the pool. Default: two per GOMAXPROCS, within 4..32.
	MaxConns int32
	// MinConns connections are kept open. Default 0.
	MinConns int32
	// ConnectTimeout bounds dialling a connection, so that requests fail
	// fast (and answer 503) when the server is down. Default 5s.
	ConnectTimeout time.Duration
	// MaxConnIdleTime closes connections idle longer. Default 5m.
	MaxConnIdleTime time.Duration
	// MaxConnLifetime recycles connections. Default 1h.
	MaxConnLifetime time.Duration
	// ApplicationName shows in pg_stat_activity and the server log.
	ApplicationName string
}

// Open connects a pool and checks the server answers, so that a wrong URL
// fails at start rather than at the first request.
func Open(ctx context.Context, url string, opts Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	applyOptions(cfg, url, opts)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres pool: ping: %w", err)
	}
	return pool, nil
}

func applyOptions(cfg *pgxpool.Config, url string, opts Options) {
	cfg.MaxConns = pick(opts.MaxConns, cfg.MaxConns, defaultMaxConns(), urlSets(url, "pool_max_conns"))
	cfg.MinConns = pick(opts.MinConns, cfg.MinConns, 0, urlSets(url, "pool_min_conns"))
	cfg.MaxConnIdleTime = pick(opts.MaxConnIdleTime, cfg.MaxConnIdleTime, defaultMaxIdleTime, urlSets(url, "pool_max_conn_idle_time"))
	cfg.MaxConnLifetime = pick(opts.MaxConnLifetime, cfg.MaxConnLifetime, defaultMaxLifetime, urlSets(url, "pool_max_conn_lifetime"))
	cfg.ConnConfig.ConnectTimeout = pick(opts.ConnectTimeout, cfg.ConnConfig.ConnectTimeout, defaultConnectTimeout, urlSets(url, "connect_timeout"))
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
}

// pick returns the option when set, else what the URL said, else our default.
func pick[T comparable](option, fromURL, fallback T, urlSetIt bool) T {
	var zero T
	switch {
	case option != zero:
		return option
	case urlSetIt:
		return fromURL
	default:
		return fallback
	}
}

// urlSets reports whether a URL or keyword/value string names the parameter.
// pgxpool.Config cannot tell a parsed value from its own default.
func urlSets(url, param string) bool {
	return strings.Contains(url, param+"=")
}

func defaultMaxConns() int32 {
	n := int32(2 * runtime.GOMAXPROCS(0))
	return min(max(n, minDefaultConns), maxDefaultConns)
}
