// Package process is the common life of a service binary: read the shared
// configuration, connect to Postgres and Kafka, watch them, serve the
// operator endpoints, run the service's servers and loops, and shut down
// in order on SIGINT/SIGTERM. Each cmd/<name>/main.go only adds what is
// its own.
package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/health"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/serve"
)

// Needs says which dependencies a service connects to.
type Needs struct {
	Postgres bool
	Kafka    bool
}

// Common is the configuration every service binary reads.
type Common struct {
	Environment  environment.Environment // ENVIRONMENT (hoodi)
	DatabaseURL  string                  // DATABASE_URL, required when the service needs Postgres
	KafkaBrokers []string                // KAFKA_BROKERS, required when the service needs Kafka
	// KafkaCompression (KAFKA_COMPRESSION, snappy) is the codec of every
	// batch the service produces (kafka.Config.Compression).
	KafkaCompression string
	AdminAddr        string        // ADMIN_ADDR (:9100)
	LogLevel         slog.Level    // LOG_LEVEL (info)
	ShutdownGrace    time.Duration // SHUTDOWN_GRACE (10s)
}

// ReadCommon reads the shared variables and validates them for needs.
func ReadCommon(r *config.Reader, needs Needs) Common {
	c := Common{
		DatabaseURL:      r.String("DATABASE_URL", ""),
		KafkaBrokers:     r.List("KAFKA_BROKERS"),
		KafkaCompression: r.String("KAFKA_COMPRESSION", kafka.DefaultCompression),
		AdminAddr:        r.String("ADMIN_ADDR", ":9100"),
		LogLevel:         r.LogLevel("LOG_LEVEL", slog.LevelInfo),
		ShutdownGrace:    r.Duration("SHUTDOWN_GRACE", 10*time.Second, 0, 5*time.Minute),
	}
	c.Environment = readEnvironment(r)
	if needs.Postgres && c.DatabaseURL == "" {
		r.Fail("DATABASE_URL is required, e.g. postgres://user:pass@host:5432/exchange")
	}
	if err := kafka.CheckCompression(c.KafkaCompression); err != nil {
		r.Fail("KAFKA_COMPRESSION: %v", err)
	}
	if needs.Kafka && len(c.KafkaBrokers) == 0 {
		r.Fail("KAFKA_BROKERS is required, e.g. kafka-1:9092,kafka-2:9092")
	}
	return c
}

// readEnvironment reads ENVIRONMENT (hoodi). The dev chain's clock has no
// fixed genesis: a service on it takes DEV_GENESIS and SLOT_LENGTH (2s),
// as the dev stack does, so that several service processes agree on the
// slots. Without DEV_GENESIS the genesis stays unset, which only a slot
// clock refuses (environment.ValidateClock).
func readEnvironment(r *config.Reader) environment.Environment {
	env, err := environment.Lookup(r.String("ENVIRONMENT", "hoodi"))
	if err != nil {
		r.Fail("ENVIRONMENT: %v", err)
		return env
	}
	if env.Name != "dev" {
		return env
	}
	slotLength := r.Duration("SLOT_LENGTH", env.SlotLength, environment.MinSlotLength, time.Minute)
	var genesis time.Time
	if raw := r.String("DEV_GENESIS", ""); raw != "" {
		if genesis, err = environment.ParseGenesis(raw); err != nil {
			r.Fail("DEV_GENESIS: %v", err)
		}
	}
	return env.WithDevClock(genesis, slotLength)
}

// Process holds the connections and operator surface of one service.
type Process struct {
	Name     string
	Common   Common
	Log      *slog.Logger
	Registry *prometheus.Registry
	Monitor  *health.Monitor
	Pool     *pgxpool.Pool // nil unless Needs.Postgres
	Kafka    *kgo.Client   // nil unless Needs.Kafka

	admin   *health.Admin
	adminLn net.Listener
}

// Boot connects what the service needs and binds the admin address.
func Boot(ctx context.Context, name string, c Common, needs Needs) (*Process, error) {
	p := &Process{Name: name, Common: c, Log: serve.NewLogger(c.LogLevel).With("service", name), Registry: prometheus.NewRegistry()}
	p.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p.Monitor = health.NewMonitor(p.Log, 500*time.Millisecond, 2*time.Second)
	if err := p.connect(ctx, needs); err != nil {
		p.Close()
		return nil, err
	}
	ln, err := serve.Listen(c.AdminAddr)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.adminLn, p.admin = ln, health.NewAdmin(p.Registry, p.Monitor)
	return p, nil
}

func (p *Process) connect(ctx context.Context, needs Needs) error {
	if needs.Postgres {
		pool, err := postgres.Open(ctx, p.Common.DatabaseURL, postgres.Options{ApplicationName: p.Name, ConnectTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		p.Pool = pool
		p.Registry.MustRegister(postgres.NewPoolCollector(pool))
		p.Monitor.Add("postgres", func(ctx context.Context) error { return pool.Ping(ctx) })
	}
	if needs.Kafka {
		cl, err := kafka.NewClient(kafka.Config{Brokers: p.Common.KafkaBrokers, ClientID: p.Name, Compression: p.Common.KafkaCompression})
		if err != nil {
			return err
		}
		p.Kafka = cl
		p.Monitor.Add("kafka", func(ctx context.Context) error { return kafka.Ping(ctx, cl) })
	}
	return nil
}

// DBErr is the last Postgres probe, for httpx.Needs.
func (p *Process) DBErr() error { return p.Monitor.Err("postgres") }

// Server is one HTTP listener of the service.
type Server struct {
	Addr    string
	Handler http.Handler
}

// Run serves the admin endpoints, the servers and the loops until ctx ends
// or one of them fails; then readiness fails first, the servers drain, the
// loops stop and the connections close.
func (p *Process) Run(ctx context.Context, servers []Server, loops ...func(context.Context) error) error {
	defer p.Close()
	g := serve.Group{Grace: p.Common.ShutdownGrace, Draining: p.admin.Drain}
	g.Servers = append(g.Servers, serve.Listening{Listener: p.adminLn, Handler: p.admin.Handler()})
	for _, s := range servers {
		ln, err := serve.Listen(s.Addr)
		if err != nil {
			return err
		}
		g.Servers = append(g.Servers, serve.Listening{Listener: ln, Handler: s.Handler})
		p.Log.Info("listening", "addr", ln.Addr().String())
	}
	p.Monitor.ProbeAll(ctx)
	g.Loops = append([]func(context.Context) error{func(ctx context.Context) error { p.Monitor.Run(ctx); return nil }}, loops...)
	err := g.Run(ctx)
	p.Log.Info("shut down")
	return err
}

// Close flushes and closes the connections.
func (p *Process) Close() {
	if p.Kafka != nil {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.Kafka.Flush(fctx)
		cancel()
		p.Kafka.Close()
		p.Kafka = nil
	}
	if p.Pool != nil {
		p.Pool.Close()
		p.Pool = nil
	}
}

// ErrFinished, returned by a build function, means the binary did its
// one-shot job (such as applying migrations) and exits with status 0.
var ErrFinished = errors.New("finished")

// Main is the shape of every service's main: parse flags (including
// -healthcheck), read configuration, boot, let the service build itself
// with build, and run until SIGINT/SIGTERM. It returns the exit code.
func Main(name string, needs Needs, build func(ctx context.Context, p *Process, r *config.Reader) ([]Server, []func(context.Context) error, error)) int {
	healthcheck := flag.Bool("healthcheck", false, "ask this service's admin endpoint for readiness and exit 0 (ready) or 1")
	flag.Parse()
	r := config.FromEnv()
	common := ReadCommon(r, needs)
	if *healthcheck {
		return serve.HealthcheckMain(common.AdminAddr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := r.Err(); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 2
	}
	p, err := Boot(ctx, name, common, needs)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	servers, loops, err := build(ctx, p, r)
	if errors.Is(err, ErrFinished) {
		p.Close()
		return 0
	}
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		p.Close()
		p.Log.Error("start", "error", err)
		return 1
	}
	if err := p.Run(ctx, servers, loops...); err != nil {
		p.Log.Error("run", "error", err)
		return 1
	}
	p.Log.Info("stopped")
	return 0
}
