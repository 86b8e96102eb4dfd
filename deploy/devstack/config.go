// Package devstack runs the whole exchange in one process on one machine:
// an embedded Kafka-protocol broker and a private PostgreSQL cluster when
// no external ones are configured, every service, and one REST base
// address routed to ingress and query-api the way the production gateway
// routes it.
package devstack

import (
	"log/slog"
	"path/filepath"
	"time"

	"blockspace.exchange/ingress"
	"blockspace.exchange/matcher"
	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	queryapi "blockspace.exchange/query-api"
	"blockspace.exchange/settler"
)

// Config is the dev stack's configuration; every field has a default that
// runs on a fresh machine with no set-up.
type Config struct {
	DataDir            string                  // DATA_DIR: where embedded Kafka and Postgres keep their data (.data)
	RESTAddr           string                  // HTTP_ADDR: the REST base address (127.0.0.1:8080)
	AdminAddr          string                  // ADMIN_ADDR: /healthz, /readyz, /metrics (127.0.0.1:9100)
	KafkaAddr          string                  // KAFKA_ADDR: embedded broker address (127.0.0.1:9092)
	KafkaBrokers       []string                // KAFKA_BROKERS: external cluster; unset = embedded broker
	EmbeddedKafka      string                  // EMBEDDED_KAFKA: which broker to embed, EmbeddedKfake or EmbeddedApache (kfake)
	KafkaCompression   string                  // KAFKA_COMPRESSION: codec of produced batches (snappy)
	DatabaseURL        string                  // DATABASE_URL: external Postgres; unset = private cluster
	Environment        environment.Environment // ENVIRONMENT: dev, hoodi or mainnet (dev)
	MaxInFlight        int                     // MAX_IN_FLIGHT: concurrent requests per service before 429 (1024)
	ShutdownGrace      time.Duration           // SHUTDOWN_GRACE: time in-flight requests get to finish (10s)
	LogLevel           slog.Level              // LOG_LEVEL: debug, info, warn, error (info)
	OriginatorAddr     string                  // ORIGINATOR_ADDR: originator JSON-RPC {originator_url} (127.0.0.1:8081)
	SearcherAddr       string                  // SEARCHER_ADDR: searcher JSON-RPC and WebSocket {searcher_url} (127.0.0.1:8082)
	OrderflowAddr      string                  // ORDERFLOW_ADDR: orderflow keys, tracking, refunds {orderflow_url} (127.0.0.1:8083)
	DevBuilderAddr     string                  // DEV_BUILDER_ADDR: the dev builder's eth_sendBundle endpoint (127.0.0.1:0 = a free port)
	DevBlockInterval   time.Duration           // DEV_BLOCK_INTERVAL: a block of the dev chain every (2s; 0 = only on request, evm_mine)
	ChainAddr          string                  // CHAIN_ADDR: the dev chain's JSON-RPC (127.0.0.1:8545; empty = not served)
	ChainConfirmations uint64                  // CHAIN_CONFIRMATIONS: blocks before a deposit is credited or a payout final (2 on the dev chain)
	ChainPoll          time.Duration           // CHAIN_POLL: how often the deposit watcher and withdrawal executor look at the chain (250ms)
	// SlotLength (SLOT_LENGTH, 2s) and DevGenesis (DEV_GENESIS, RFC 3339
	// or UNIX seconds; default: the first start, kept in DATA_DIR) set the
	// dev chain's slot clock; other environments keep their own.
	SlotLength time.Duration
	DevGenesis time.Time
	// DemoValidator (DEMO_VALIDATOR, true) registers the demo validator
	// at start, so that markets open at once.
	DemoValidator bool
	// Ingress: the ingress's variables (see ingress.ConfigFromEnv) over
	// the dev stack's defaults: no orderflow rate limits unless their
	// variables are set. Without AUTH_SIGNING_KEY_FILE or AUTH_SIGNING_KEY
	// the stack generates a key once and keeps it in
	// DATA_DIR/keys/access-token-es256.pem (0600). Its listeners are the
	// addresses above, its chain the dev chain with CHAIN_CONFIRMATIONS
	// and CHAIN_POLL as above, its beacon the dev beacon.
	Ingress ingress.Config
	// Matcher: MATCHER_* variables (see matcher.ConfigFromEnv); the stack
	// runs one matcher, instance "dev", on its own brokers.
	Matcher matcher.Config
	// Relay: the orderflow relay's variables (see relay.ConfigFromEnv)
	// over the dev chain's pace: REFUND_CONFIRMATIONS 1, BUILDER_BATCH
	// 100 (the dev builder takes batches) and CHAIN_POLL 100ms. Its
	// address, builder, chain and payer are the dev stack's own.
	Relay relay.Config
	// Settler: SETTLER_* variables (see settler.ConfigFromEnv); the
	// withdrawal executor pays on the dev chain with CHAIN_CONFIRMATIONS
	// and CHAIN_POLL as above.
	Settler settler.Config
	// Query: query-api's variables (see queryapi.ConfigFromEnv); its
	// COLLATERAL_CONTRACT defaults to the dev chain's contract. The REST
	// address is the gateway's, HTTP_ADDR above.
	Query queryapi.Config
	// PostgresSettings are extra server settings of the private Postgres
	// (devpostgres.Config.Settings); no variable sets them, a measurement
	// does in code (deploy/cmd/tradebench -pgstat). None by default.
	PostgresSettings map[string]string
}

// The brokers the dev stack can embed when KAFKA_BROKERS is unset.
const (
	// EmbeddedKfake is franz-go's in-process broker: no Java, starts at
	// once, keeps its data in DATA_DIR/kafka.
	EmbeddedKfake = "kfake"
	// EmbeddedApache is a local Apache Kafka broker (one KRaft node) from
	// the jars scripts/ensure-kafka.sh resolves, started as a child process
	// that keeps its data in DATA_DIR/kafka-apache (make run-kafka).
	EmbeddedApache = "apache"
)

// ConfigFromEnv reads the configuration, reporting every bad variable.
func ConfigFromEnv(r *config.Reader) (Config, error) {
	cfg := Config{
		DataDir:            r.String("DATA_DIR", ".data"),
		RESTAddr:           r.String("HTTP_ADDR", "127.0.0.1:8080"),
		AdminAddr:          r.String("ADMIN_ADDR", "127.0.0.1:9100"),
		KafkaAddr:          r.String("KAFKA_ADDR", "127.0.0.1:9092"),
		KafkaBrokers:       r.List("KAFKA_BROKERS"),
		EmbeddedKafka:      r.String("EMBEDDED_KAFKA", EmbeddedKfake),
		KafkaCompression:   r.String("KAFKA_COMPRESSION", kafka.DefaultCompression),
		DatabaseURL:        r.String("DATABASE_URL", ""),
		MaxInFlight:        httpx.MaxInFlightFromEnv(r),
		ShutdownGrace:      r.Duration("SHUTDOWN_GRACE", 10*time.Second, 0, 5*time.Minute),
		LogLevel:           r.LogLevel("LOG_LEVEL", slog.LevelInfo),
		Ingress:            devIngress().FromEnv(r),
		Matcher:            matcher.ConfigFromEnv(r),
		Relay:              devRelay().FromEnv(r),
		Settler:            settler.ConfigFromEnv(r),
		Query:              queryapi.ConfigFromEnv(r),
		SlotLength:         r.Duration("SLOT_LENGTH", 2*time.Second, environment.MinSlotLength, time.Minute),
		DevGenesis:         readGenesis(r),
		DemoValidator:      r.Bool("DEMO_VALIDATOR", true),
		OriginatorAddr:     r.String("ORIGINATOR_ADDR", "127.0.0.1:8081"),
		SearcherAddr:       r.String("SEARCHER_ADDR", "127.0.0.1:8082"),
		OrderflowAddr:      r.String("ORDERFLOW_ADDR", "127.0.0.1:8083"),
		DevBuilderAddr:     r.String("DEV_BUILDER_ADDR", "127.0.0.1:0"),
		DevBlockInterval:   readBlockInterval(r),
		ChainAddr:          r.StringOrEmpty("CHAIN_ADDR", "127.0.0.1:8545"),
		ChainConfirmations: uint64(r.Int("CHAIN_CONFIRMATIONS", 2, 0, 10_000)),
		ChainPoll:          r.Duration("CHAIN_POLL", devChainPoll, 10*time.Millisecond, time.Minute),
	}
	if err := kafka.CheckCompression(cfg.KafkaCompression); err != nil {
		r.Fail("KAFKA_COMPRESSION: %v", err)
	}
	if cfg.EmbeddedKafka != EmbeddedKfake && cfg.EmbeddedKafka != EmbeddedApache {
		r.Fail("EMBEDDED_KAFKA=%q: want %s (in-process, the default) or %s (a local Apache Kafka broker from the jars of scripts/ensure-kafka.sh)",
			cfg.EmbeddedKafka, EmbeddedKfake, EmbeddedApache)
	}
	env, err := environment.Lookup(r.String("ENVIRONMENT", "dev"))
	if err != nil {
		r.Fail("ENVIRONMENT: %v", err)
	}
	cfg.Environment = env
	if abs, err := filepath.Abs(cfg.DataDir); err == nil {
		cfg.DataDir = abs
	}
	return cfg, r.Err()
}

// devIngress is the ingress's configuration on the dev stack before the
// variables are read: the orderflow edges take submissions and challenges
// without rate limits, as the dev tools and tests send many from one
// address.
func devIngress() ingress.Config {
	c := ingress.DefaultConfig()
	c.Orderflow.ChallengeRate, c.Orderflow.SubmitRatePerIP, c.Orderflow.SubmitRatePerSender = ingress.Rate{}, ingress.Rate{}, ingress.Rate{}
	return c
}

// devRelay is the relay's configuration on the dev chain before the
// variables are read.
func devRelay() relay.Config {
	c := relay.DefaultConfig()
	c.RefundConfirmations, c.BuilderBatch, c.ChainPoll = 1, 100, 100*time.Millisecond
	return c
}

// readBlockInterval reads DEV_BLOCK_INTERVAL: 0 in any form (0, 0s) for
// no automatic blocks, or 50ms to 1m.
func readBlockInterval(r *config.Reader) time.Duration {
	raw := r.String("DEV_BLOCK_INTERVAL", "")
	if raw == "" {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(raw)
	if err == nil && (d == 0 || d >= 50*time.Millisecond && d <= time.Minute) {
		return d
	}
	r.Fail("DEV_BLOCK_INTERVAL=%q: want 0 (blocks only on evm_mine) or a duration from 50ms to 1m, such as 2s", raw)
	return 2 * time.Second
}

// readGenesis reads DEV_GENESIS as RFC 3339 or UNIX seconds.
func readGenesis(r *config.Reader) time.Time {
	raw := r.String("DEV_GENESIS", "")
	if raw == "" {
		return time.Time{}
	}
	t, err := environment.ParseGenesis(raw)
	if err != nil {
		r.Fail("DEV_GENESIS: %v", err)
	}
	return t
}
