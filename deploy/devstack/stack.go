package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/devpostgres"
	"blockspace.exchange/platform/health"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kfakebroker"
	"blockspace.exchange/platform/kafka/kraft"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/serve"
	queryapi "blockspace.exchange/query-api"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// Stack is the started system. Start brings it up; Run serves until its
// context ends and then shuts everything down in order.
type Stack struct {
	cfg Config
	log *slog.Logger

	pg     *devpostgres.Server // nil with an external DATABASE_URL
	broker embeddedBroker      // nil with external KAFKA_BROKERS
	pool   *pgxpool.Pool       // ingress, orderflow, funding and migrations
	// readPool and settlerPool are query-api's and the settler's own, as
	// each service has its own pool in production: a settler batch or a
	// burst of reads never takes the connections ingress's load shedding
	// counts as its own.
	readPool, settlerPool *pgxpool.Pool
	kcl                   *kgo.Client
	monitor               *health.Monitor
	admin                 *health.Admin
	query                 *queryapi.Service
	ingress               *ingress.Service
	settler               *settler.Settler
	restLn                net.Listener
	adminLn               net.Listener
	dbURL                 string
	brokers               []string
	registry              *prometheus.Registry
	// outboxMetrics serve ingress's and the orderflow relay's outboxes:
	// one table, one registry.
	outboxMetrics *outbox.Metrics
	of            orderflowParts
	funding       fundingParts
	chainURL      string // the dev chain's JSON-RPC, "" when not served

	// The markets: the dev beacon, the slot clock, the matcher, and the
	// public key of the demo validator registered at start.
	beacon     ingress.Beacon
	clock      *ingress.Clock
	matcher    *matcher.Matcher
	demoPubkey string
}

// Start brings up the dependencies, applies migrations, creates topics and
// builds every service. On error everything already started is stopped.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*Stack, error) {
	s := &Stack{cfg: cfg, log: log, registry: prometheus.NewRegistry()}
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := s.start(ctx); err != nil {
		s.stopDependencies()
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) error {
	if err := checkAddresses(s.cfg); err != nil {
		return err
	}
	if err := s.startPostgres(ctx); err != nil {
		return err
	}
	if err := s.startKafka(ctx); err != nil {
		return err
	}
	s.startMonitor()
	env, err := devClock(s.cfg, time.Now())
	if err != nil {
		return err
	}
	s.cfg.Environment = env
	s.devCollateral()
	if err := s.buildServices(ctx); err != nil {
		return err
	}
	if err := s.buildMarkets(ctx); err != nil {
		return err
	}
	if err := s.startOrderflow(ctx); err != nil {
		return err
	}
	if err := s.startFunding(ctx); err != nil {
		return err
	}
	return s.listen()
}

func (s *Stack) startPostgres(ctx context.Context) error {
	s.dbURL = s.cfg.DatabaseURL
	if s.dbURL == "" {
		pg, err := devpostgres.Start(ctx, devpostgres.Config{
			DataDir: filepath.Join(s.cfg.DataDir, "postgres"), Logger: s.log, Settings: s.cfg.PostgresSettings,
		})
		if err != nil {
			return fmt.Errorf("start embedded postgres: %w", err)
		}
		s.pg, s.dbURL = pg, pg.URL()
	}
	pool, err := postgres.Open(ctx, s.dbURL, postgres.Options{ApplicationName: "exchange", ConnectTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	s.pool = pool
	applied, err := postgres.Migrate(ctx, pool, schema.Migrations())
	if err != nil {
		return err
	}
	s.log.Info("migrations applied", "new", applied)
	if s.readPool, err = postgres.Open(ctx, s.dbURL, postgres.Options{ApplicationName: "query-api", ConnectTimeout: 2 * time.Second}); err != nil {
		return err
	}
	if s.settlerPool, err = postgres.Open(ctx, s.dbURL, postgres.Options{ApplicationName: "settler", ConnectTimeout: 2 * time.Second}); err != nil {
		return err
	}
	// One collector for the three pools: on the one registry they are the
	// process's connections, as each service's pool is in production.
	if err := s.registry.Register(postgres.NewPoolCollector(s.pool, s.readPool, s.settlerPool)); err != nil {
		return err
	}
	s.outboxMetrics = outbox.NewMetrics(s.pool)
	return s.registry.Register(s.outboxMetrics)
}

// embeddedBroker is the broker the stack started itself: kfake in this
// process or an Apache Kafka node as a child process.
type embeddedBroker interface {
	Addrs() []string
	Close() error
}

func (s *Stack) startKafka(ctx context.Context) error {
	s.brokers = s.cfg.KafkaBrokers
	if len(s.brokers) == 0 {
		b, err := s.startEmbeddedKafka(ctx)
		if err != nil {
			return err
		}
		s.broker, s.brokers = b, b.Addrs()
	}
	kcl, err := kafka.NewClient(kafka.Config{Brokers: s.brokers, ClientID: "exchange", Compression: s.cfg.KafkaCompression})
	if err != nil {
		return err
	}
	s.kcl = kcl
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(kcl), topics.Catalog()); err != nil {
		return err
	}
	return nil
}

func (s *Stack) startEmbeddedKafka(ctx context.Context) (embeddedBroker, error) {
	if s.cfg.EmbeddedKafka == EmbeddedApache {
		s.log.Info("starting Apache Kafka " + kraft.Version + " (a JVM; the first start takes a few seconds)")
		c, err := kraft.Start(ctx, kraft.Config{Dir: filepath.Join(s.cfg.DataDir, "kafka-apache"), Addrs: []string{s.cfg.KafkaAddr}})
		if err != nil {
			return nil, fmt.Errorf("start apache kafka: %w", err)
		}
		return c, nil
	}
	defer leaveStage(ctx)
	enterStage(ctx, StageBroker)
	b, err := kfakebroker.Start(ctx, kfakebroker.Config{
		Addr: s.cfg.KafkaAddr, DataDir: filepath.Join(s.cfg.DataDir, "kafka"), Logger: s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("start embedded kafka: %w", err)
	}
	return b, nil
}

func (s *Stack) startMonitor() {
	s.monitor = health.NewMonitor(s.log, 500*time.Millisecond, 2*time.Second)
	s.monitor.Add("postgres", func(ctx context.Context) error { return s.pool.Ping(ctx) })
	s.monitor.Add("kafka", func(ctx context.Context) error { return kafka.Ping(ctx, s.kcl) })
	s.admin = health.NewAdmin(s.registry, s.monitor)
}

func (s *Stack) buildServices(ctx context.Context) error {
	dbErr := func() error { return s.monitor.Err("postgres") }
	defer leaveStage(ctx)
	enterStage(ctx, StageQuery)
	qm, err := httpx.NewMetrics(s.registry, "query-api")
	if err != nil {
		return err
	}
	qc := s.cfg.Query
	qc.Environment = s.cfg.Environment
	qc.Kafka = kafka.Config{Brokers: s.brokers, Compression: s.cfg.KafkaCompression}
	s.query, err = queryapi.New(ctx, qc, queryapi.Deps{Pool: s.readPool, Logger: s.log, Metrics: qm, DBErr: dbErr})
	if err != nil {
		return err
	}
	if err := s.query.RegisterMetrics(s.registry); err != nil {
		return err
	}
	enterStage(ctx, StageIngress)
	im, err := httpx.NewMetrics(s.registry, "ingress")
	if err != nil {
		return err
	}
	ic := &s.cfg.Ingress
	ic.Environment = s.cfg.Environment
	if ic.Auth.SigningKey == nil {
		if ic.Auth.SigningKey, err = devkit.LoadOrCreateSigningKey(filepath.Join(s.cfg.DataDir, "keys", "access-token-es256.pem")); err != nil {
			return err
		}
	}
	s.ingress, err = ingress.New(ctx, *ic,
		ingress.Deps{Pool: s.pool, Logger: s.log, Metrics: im, DBErr: dbErr, OutboxMetrics: s.outboxMetrics,
			Kafka: s.kcl, KafkaErr: func() error { return s.monitor.Err("kafka") }})
	if err != nil {
		return err
	}
	if err := s.ingress.RegisterMetrics(s.registry); err != nil {
		return err
	}
	enterStage(ctx, StageSettler)
	sc := s.cfg.Settler
	sc.Brokers, sc.KafkaCompression = s.brokers, s.cfg.KafkaCompression
	s.settler, err = settler.New(ctx, sc, s.settlerPool, s.log.With("service", "settler"))
	if err != nil {
		return err
	}
	return s.settler.RegisterMetrics(s.registry)
}

func (s *Stack) listen() error {
	var err error
	if s.restLn, err = serve.Listen(s.cfg.RESTAddr); err != nil {
		return err
	}
	if s.adminLn, err = serve.Listen(s.cfg.AdminAddr); err != nil {
		s.restLn.Close()
		return err
	}
	return nil
}

// RESTHandler is the one REST base address: the in-process gateway.
func (s *Stack) RESTHandler() http.Handler {
	return gateway{reads: newStagedHandler(StageQuery, s.query.Handler()), writes: newStagedHandler(StageIngress, s.ingress.Handler())}
}

// Routes lists every REST route the services serve.
func (s *Stack) Routes() []httpx.Route {
	return append(s.query.Routes(), s.ingress.Routes()...)
}

// Run serves until ctx ends, then shuts down: readiness fails first, the
// listeners drain their in-flight requests, background work stops, and
// the dependencies close last.
func (s *Stack) Run(ctx context.Context) error {
	defer s.stopDependencies()
	s.monitor.ProbeAll(ctx)
	g := serve.Group{
		Servers: []serve.Listening{
			{Listener: s.restLn, Handler: s.RESTHandler()},
			{Listener: s.adminLn, Handler: s.admin.Handler()},
		},
		Loops: []func(context.Context) error{
			func(ctx context.Context) error { s.monitor.Run(ctx); return nil },
			staged(StageQuery, s.query.Run),
			staged(StageIngress, s.ingress.Run),
			staged(StageMatcher, s.runMatcher),
			staged(StageIngress, s.clock.Run),
			staged(StageSettler, s.runSettler),
		},
		Grace:    s.cfg.ShutdownGrace,
		Draining: s.admin.Drain,
	}
	g.Servers = append(g.Servers, s.orderflowServers()...)
	g.Loops = append(g.Loops, s.orderflowLoops()...)
	g.Loops = append(g.Loops, s.fundingLoops()...)
	err := g.Run(ctx)
	s.log.Info("shut down")
	return err
}

func (s *Stack) runSettler(ctx context.Context) error {
	defer s.settler.Close()
	return s.settler.Run(ctx)
}

// stopDependencies closes clients and stops the embedded servers. The
// broker and the database stop last so that nothing acknowledged is lost.
func (s *Stack) stopDependencies() {
	s.stopOrderflow()
	if s.kcl != nil {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.kcl.Flush(fctx)
		cancel()
		s.kcl.Close()
	}
	for _, p := range []*pgxpool.Pool{s.pool, s.readPool, s.settlerPool} {
		if p != nil {
			p.Close()
		}
	}
	if s.broker != nil {
		if err := s.broker.Close(); err != nil {
			s.log.Error("stop embedded kafka", "error", err)
		}
	}
	if s.pg != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.pg.Stop(sctx); err != nil {
			s.log.Error("stop embedded postgres", "error", err)
		}
		cancel()
	}
}
