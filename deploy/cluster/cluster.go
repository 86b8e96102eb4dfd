// Package cluster runs the production shape of the exchange on one machine
// (make run-cluster, docs/deploy.md "The production shape on one
// machine"): a three-broker Apache Kafka cluster in KRaft mode, a private
// PostgreSQL, the one-shot topicctl and migrate steps, every service as a
// process of its own built from <module>/cmd/<name> with the environment
// docker-compose.yml gives it, two matchers and two query-api instances,
// and the nginx gateway of deploy/gateway/nginx.conf in front. The dev
// chain, its builder and a beacon API stand in for the outside world.
//
// Tests drive the same cluster to crash and restart its parts: brokers,
// service instances, the database.
package cluster

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/platform/devpostgres"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka/kraft"
	"blockspace.exchange/platform/postgres"
)

// Config describes the cluster. The zero value of each field is its
// documented default.
type Config struct {
	// Repo is the repository root: docker-compose.yml, the gateway's
	// configuration and the sources the binaries are built from. Default:
	// the nearest directory upward from the working directory with go.work.
	Repo string
	// DataDir holds everything of a run: brokers, database, binaries,
	// keys, the gateway's configuration and one log per process. Emptied
	// at start: every run begins with an empty exchange. Default
	// <Repo>/.data/cluster.
	DataDir string
	// BuildCache is where the service binaries are built before each run
	// copies them into its DataDir; kept between runs, so that a run
	// links again only the binaries whose sources changed. Default
	// <Repo>/.cache/cluster-bin.
	BuildCache string
	// Public are the gateway's addresses by the port nginx.conf listens
	// on: 8080 REST base, 8081 originator, 8082 searcher, 8083 orderflow.
	// Default 127.0.0.1 with the same port; "127.0.0.1:0" picks a free one.
	Public map[string]string
	// KafkaAddrs are the three brokers' client listeners. Default
	// 127.0.0.1:9092, :9094 and :9096; empty strings pick free ports.
	KafkaAddrs []string
	// Instances is how many processes each service runs. Default: two
	// matchers, two query-api instances, one of everything else.
	Instances map[string]int
	// SlotLength is the dev chain's slot (2s); BlockInterval how often it
	// mines a block (1s).
	SlotLength, BlockInterval time.Duration
	// ManualBlocks makes the dev chain mine only when asked (the dev
	// builder's evm_mine), for tests that step the chain.
	ManualBlocks bool
	// Env sets variables of every service over the compose file's and
	// the runner's (for example LOG_LEVEL or ORDER_ANSWER_WAIT).
	Env map[string]string
	// Lookup resolves the compose file's ${VAR:-default}. Default
	// os.LookupEnv, as `docker compose up` reads the shell.
	Lookup func(string) (string, bool)
	// QuickBrokers starts the brokers with kraft's test settings (fast
	// JVM start, short sessions): for tests.
	QuickBrokers bool
	// Logger receives the runner's own lifecycle messages.
	Logger *slog.Logger
}

// Services are the long-running services of the compose file, in the order
// the runner starts them: consumers first, so that the first commands find
// their readers, then the edges.
var Services = []string{"settler", "matcher", "ingress", "orderflow-relay", "query-api"}

// DefaultInstances are the instances of each service unless
// Config.Instances says otherwise.
var DefaultInstances = map[string]int{"matcher": 2, "query-api": 2}

// readyTimeout bounds one instance's start, from exec to /readyz.
const readyTimeout = 90 * time.Second

// StopGrace is how long an instance gets to drain after SIGTERM, the
// compose file's stop_grace_period.
const StopGrace = 30 * time.Second

// Cluster is the running production shape.
type Cluster struct {
	cfg     Config
	log     *slog.Logger
	compose map[string]map[string]string
	genesis time.Time
	binDir  string

	kafka   *kraft.Cluster
	pg      *devpostgres.Server
	pgPort  int
	pool    *pgxpool.Pool
	devnet  *devnet
	gateway *gateway
	keyPath string
	opPath  string

	mu        sync.Mutex
	instances map[string][]*Instance // by service, in start order
	seq       map[string]int         // instances ever made, by service
	upstreams Upstreams
}

// Start brings the whole shape up and returns once the gateway answers.
// On an error everything already started is stopped again.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, instances: map[string][]*Instance{}, seq: map[string]int{}, upstreams: Upstreams{}}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.Repo == "" {
		repo, err := findRepo()
		if err != nil {
			return c, err
		}
		c.Repo = repo
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(c.Repo, ".data", "cluster")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, err
	}
	c.DataDir = abs
	if c.BuildCache == "" {
		c.BuildCache = filepath.Join(c.Repo, ".cache", "cluster-bin")
	}
	if c.BuildCache, err = filepath.Abs(c.BuildCache); err != nil {
		return c, err
	}
	if c.Public == nil {
		c.Public = map[string]string{}
	}
	for _, port := range []string{"8080", "8081", "8082", "8083"} {
		if c.Public[port] == "" {
			c.Public[port] = "127.0.0.1:" + port
		}
	}
	if len(c.KafkaAddrs) == 0 {
		c.KafkaAddrs = []string{"127.0.0.1:9092", "127.0.0.1:9094", "127.0.0.1:9096"}
	}
	if len(c.KafkaAddrs) != 3 {
		return c, fmt.Errorf("cluster: %d Kafka addresses; the cluster has three brokers", len(c.KafkaAddrs))
	}
	instances := map[string]int{}
	for _, s := range Services {
		instances[s] = max(DefaultInstances[s], 1)
		if n, ok := c.Instances[s]; ok {
			instances[s] = n
		}
	}
	c.Instances = instances
	if c.SlotLength == 0 {
		c.SlotLength = 2 * time.Second
	}
	if c.BlockInterval == 0 {
		c.BlockInterval = time.Second
	}
	if c.Lookup == nil {
		c.Lookup = os.LookupEnv
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// findRepo is the nearest directory upward from the working directory
// that holds go.work.
func findRepo() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("cluster: no go.work above %s; run from the repository", wd)
		}
	}
}

func (c *Cluster) start(ctx context.Context) error {
	var err error
	c.genesis = time.Now().Truncate(time.Second)
	if c.compose, err = ComposeEnv(filepath.Join(c.cfg.Repo, "docker-compose.yml"), c.cfg.Lookup); err != nil {
		return err
	}
	if err := os.RemoveAll(c.cfg.DataDir); err != nil {
		return fmt.Errorf("cluster: clear %s: %w", c.cfg.DataDir, err)
	}
	for _, d := range []string{"logs", "secrets", "bin"} {
		if err := os.MkdirAll(filepath.Join(c.cfg.DataDir, d), 0o755); err != nil {
			return err
		}
	}
	// The embedded Postgres runs as the postgres OS user when we are root.
	if err := os.Chmod(c.cfg.DataDir, 0o755); err != nil {
		return err
	}
	c.binDir = filepath.Join(c.cfg.DataDir, "bin")
	c.log.Info("building the service binaries")
	if err := buildBinaries(ctx, c.cfg.Repo, c.cfg.BuildCache, c.binDir); err != nil {
		return err
	}
	if err := c.startKafka(ctx); err != nil {
		return err
	}
	if err := c.startPostgres(ctx); err != nil {
		return err
	}
	if err := c.oneShots(ctx); err != nil {
		return err
	}
	if err := c.startDevnet(ctx); err != nil {
		return err
	}
	if err := c.writeSecrets(); err != nil {
		return err
	}
	for _, s := range Services {
		for range c.cfg.Instances[s] {
			if _, err := c.AddInstance(ctx, s); err != nil {
				return err
			}
		}
	}
	return c.startGateway(ctx)
}

func (c *Cluster) startKafka(ctx context.Context) error {
	c.log.Info("starting three Apache Kafka " + kraft.Version + " brokers")
	kc := kraft.Config{Dir: filepath.Join(c.cfg.DataDir, "kafka"), Nodes: 3}
	if c.cfg.QuickBrokers {
		kc = kraft.TestConfig(kc.Dir)
		kc.Nodes = 3
	}
	addrs := c.cfg.KafkaAddrs
	if slicesAllEmpty(addrs) {
		addrs = nil
	}
	kc.Addrs = addrs
	k, err := kraft.Start(ctx, kc)
	if err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	c.kafka = k
	return nil
}

func slicesAllEmpty(s []string) bool {
	for _, v := range s {
		if v != "" {
			return false
		}
	}
	return true
}

func (c *Cluster) startPostgres(ctx context.Context) error {
	c.log.Info("starting PostgreSQL")
	// Commit times let load commands (tradebench) read when a row became
	// visible without polling for it.
	pg, err := devpostgres.Start(ctx, devpostgres.Config{DataDir: filepath.Join(c.cfg.DataDir, "postgres"), Port: c.pgPort, Logger: c.log,
		Settings: map[string]string{"track_commit_timestamp": "on"}})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.pg, c.pgPort = pg, pg.Port()
	return nil
}

// oneShots runs the compose file's one-shot steps with their binaries:
// topicctl apply, then settler -migrate.
func (c *Cluster) oneShots(ctx context.Context) error {
	c.log.Info("creating the topics and applying the migrations")
	if err := c.runOnce(ctx, "topics", "topicctl", c.oneShotEnv("settler"), "-brokers", strings.Join(c.Brokers(), ","), "apply"); err != nil {
		return err
	}
	return c.runOnce(ctx, "migrate", "settler", c.oneShotEnv("settler"), "-migrate")
}

// oneShotEnv is the environment of a one-shot step run with service's
// binary. The binary binds the listeners its environment names while it
// works (settler -migrate boots its admin endpoint as the service does);
// nothing asks them, so each listener the compose file sets to :<port>
// goes to a port the kernel picks on loopback, and a step never needs a
// fixed port free.
func (c *Cluster) oneShotEnv(service string) map[string]string {
	env := c.env(service)
	for _, k := range listeners(env) {
		env[k] = "127.0.0.1:0"
	}
	return env
}

func (c *Cluster) runOnce(ctx context.Context, step, bin string, env map[string]string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, bin), args...)
	cmd.Env = environ(env)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(c.cfg.DataDir, "logs", step+".log"), out, 0o644)
	if err != nil {
		return fmt.Errorf("%s (%s %s): %w\n%s", step, bin, strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *Cluster) startDevnet(ctx context.Context) error {
	pool, err := postgres.Open(ctx, c.pg.URL(), postgres.Options{ApplicationName: "cluster-runner", ConnectTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	c.pool = pool
	if _, err := devkit.RegisterValidator(ctx, pool, environment.DevChainID, devchain.DemoUserAddress, []byte(devchain.DemoValidatorSeed)); err != nil {
		return err
	}
	interval := c.cfg.BlockInterval
	if c.cfg.ManualBlocks {
		interval = 0
	}
	c.devnet, err = startDevnet(ctx, pool, interval, c.log)
	return err
}

// writeSecrets writes the access-token signing key and the collateral
// contract operator's key as files, which the services read through
// AUTH_SIGNING_KEY_FILE and WITHDRAW_OPERATOR_KEY_FILE as in compose.
func (c *Cluster) writeSecrets() error {
	c.keyPath = filepath.Join(c.cfg.DataDir, "secrets", "auth-signing-key.pem")
	if _, err := devkit.LoadOrCreateSigningKey(c.keyPath); err != nil {
		return err
	}
	c.opPath = filepath.Join(c.cfg.DataDir, "secrets", "withdraw-operator-key")
	return os.WriteFile(c.opPath, []byte(keyHex(c.devnet.chain.Key(devchain.OperatorKey))+"\n"), 0o600)
}

func keyHex(k *ecdsa.PrivateKey) string { return hex.EncodeToString(crypto.FromECDSA(k)) }

var listenVar = regexp.MustCompile(`^:([0-9]+)$`)

// env is the environment of a new instance of service: the compose
// file's, with every listener the file sets to :<port> moved to a free
// loopback address and the container names replaced by the cluster's
// addresses, then Config.Env.
func (c *Cluster) env(service string) map[string]string {
	env := map[string]string{}
	for k, v := range c.compose[service] {
		env[k] = v
	}
	env["KAFKA_BROKERS"] = strings.Join(c.Brokers(), ",")
	if c.pg != nil {
		env["DATABASE_URL"] = c.pg.URL()
	}
	// The dev chain's clock, the same for every process.
	env["ENVIRONMENT"] = "dev"
	env["DEV_GENESIS"] = strconv.FormatInt(c.genesis.Unix(), 10)
	env["SLOT_LENGTH"] = c.cfg.SlotLength.String()
	if c.devnet != nil {
		c.devnetEnv(service, env)
	}
	for k, v := range c.cfg.Env {
		env[k] = v
	}
	return env
}

// devnetEnv points service at the dev chain, builder and beacon, with the
// dev stack's chain settings (2 confirmations, fast polls).
func (c *Cluster) devnetEnv(service string, env map[string]string) {
	contract := devchain.CollateralAddress().Hex()
	switch service {
	case "ingress":
		env["AUTH_SIGNING_KEY_FILE"] = c.keyPath
		env["BEACON_URL"] = c.devnet.BeaconURL
		env["CHAIN_RPC_URL"], env["COLLATERAL_CONTRACT"] = c.devnet.ChainURL, contract
		env["CHAIN_CONFIRMATIONS"], env["CHAIN_POLL"] = "2", "250ms"
	case "settler":
		env["CHAIN_RPC_URL"], env["COLLATERAL_CONTRACT"] = c.devnet.ChainURL, contract
		env["WITHDRAW_OPERATOR_KEY_FILE"] = c.opPath
		env["CHAIN_CONFIRMATIONS"], env["CHAIN_POLL"] = "2", "250ms"
	case "orderflow-relay":
		env["BUILDER_URLS"], env["CHAIN_RPC_URL"] = c.devnet.BuilderURL, c.devnet.ChainURL
		env["REFUND_PAYER_KEY"] = keyHex(c.devnet.chain.Key(0))
		env["CHAIN_POLL"], env["REFUND_CONFIRMATIONS"] = "100ms", "1"
	case "query-api":
		env["COLLATERAL_CONTRACT"] = contract
	}
}

// AddInstance starts one more instance of service on addresses of its own
// and returns once it is ready. Services the gateway routes to get their
// instances at start only (the gateway's upstreams are fixed then).
func (c *Cluster) AddInstance(ctx context.Context, service string) (*Instance, error) {
	if _, ok := c.compose[service]; !ok {
		return nil, fmt.Errorf("cluster: no service %q in docker-compose.yml", service)
	}
	c.mu.Lock()
	if c.gateway != nil && routed(service) {
		c.mu.Unlock()
		return nil, fmt.Errorf("cluster: %s is behind the gateway; its instances are set at start (Config.Instances)", service)
	}
	c.seq[service]++
	n := c.seq[service]
	c.mu.Unlock()
	// An edge that runs alone keeps the service's name; instances of the
	// rest are numbered, as replicas are.
	name := fmt.Sprintf("%s-%d", service, n)
	if routed(service) && c.cfg.Instances[service] == 1 {
		name = service
	}
	var in *Instance
	var ports map[string]string
	// The free ports are chosen before the process binds them; another
	// process may take one meanwhile, and then they are chosen again.
	for attempt := 1; ; attempt++ {
		env := c.env(service)
		var err error
		if ports, err = place(env); err != nil {
			return nil, err
		}
		switch service {
		case "matcher":
			env["MATCHER_INSTANCE_ID"] = name
		case "settler":
			env["SETTLER_INSTANCE_ID"] = name
		}
		in = &Instance{Name: name, Service: service, Env: env, bin: filepath.Join(c.binDir, service),
			logPath: filepath.Join(c.cfg.DataDir, "logs", name+".log")}
		c.log.Info("starting " + name)
		err = in.Start(ctx, readyTimeout)
		if err == nil {
			break
		}
		_ = in.Stop(5 * time.Second)
		if attempt == portAttempts || !portTaken(err) {
			return nil, err
		}
		c.log.Info(name + " found a port it was given taken; choosing its ports again")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.instances[service] = append(c.instances[service], in)
	for port, addr := range ports {
		if port != "9100" {
			c.upstreams[service+":"+port] = append(c.upstreams[service+":"+port], addr)
		}
	}
	return in, nil
}

// listeners are the variables of env that name a listener the compose
// file sets to :<port> (ADMIN_ADDR, HTTP_ADDR, ...), in a fixed order.
func listeners(env map[string]string) []string {
	var out []string
	for k, v := range env {
		if listenVar.MatchString(v) && strings.HasSuffix(k, "_ADDR") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// place moves every listener of env that the compose file sets to
// :<port> to a free loopback address of its own, and returns which
// address took each compose port.
func place(env map[string]string) (map[string]string, error) {
	names := listeners(env)
	addrs, err := freeAddrs(len(names))
	if err != nil {
		return nil, err
	}
	ports := make(map[string]string, len(names))
	for i, k := range names {
		ports[listenVar.FindStringSubmatch(env[k])[1]] = addrs[i]
		env[k] = addrs[i]
	}
	return ports, nil
}

// portAttempts is how often a process is started on newly chosen free
// ports when one of them was taken before the process bound it.
const portAttempts = 3

// portTaken reports whether err says a listener's port was in use, in the
// words of Go's net package and of nginx.
func portTaken(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "address already in use")
}

// routed reports whether the gateway routes requests to service.
func routed(service string) bool {
	return service == "ingress" || service == "query-api" || service == "orderflow-relay"
}

// RemoveInstance stops the newest instance of service (SIGTERM, drain)
// and forgets it.
func (c *Cluster) RemoveInstance(service string) error {
	c.mu.Lock()
	list := c.instances[service]
	if len(list) == 0 {
		c.mu.Unlock()
		return fmt.Errorf("cluster: no instance of %s", service)
	}
	if routed(service) {
		c.mu.Unlock()
		return fmt.Errorf("cluster: %s is behind the gateway; restart its instances instead", service)
	}
	in := list[len(list)-1]
	c.instances[service] = list[:len(list)-1]
	c.mu.Unlock()
	c.log.Info("stopping " + in.Name)
	return in.Stop(StopGrace)
}

// startGateway starts nginx on the public addresses; one with port 0
// gets a free port, chosen now, just before nginx binds it (and again
// should another process take it first).
func (c *Cluster) startGateway(ctx context.Context) error {
	c.mu.Lock()
	ups := c.upstreams
	c.mu.Unlock()
	asked := c.cfg.Public
	for attempt := 1; ; attempt++ {
		public, err := resolvePublic(asked)
		if err != nil {
			return err
		}
		g, err := startGateway(ctx, c.cfg.Repo, filepath.Join(c.cfg.DataDir, "gateway"), filepath.Join(c.cfg.DataDir, "logs", "gateway.log"), ups, public)
		if err == nil {
			c.mu.Lock()
			c.gateway, c.cfg.Public = g, public
			c.mu.Unlock()
			return nil
		}
		if attempt == portAttempts || !portTaken(err) {
			return err
		}
		c.log.Info("the gateway found a public port taken; choosing it again")
	}
}

// resolvePublic returns public with every address of port 0 given a free
// loopback port of its own.
func resolvePublic(public map[string]string) (map[string]string, error) {
	var zero []string
	for port, addr := range public {
		if _, p, err := net.SplitHostPort(addr); err == nil && p == "0" {
			zero = append(zero, port)
		}
	}
	slices.Sort(zero)
	addrs, err := freeAddrs(len(zero))
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(public))
	for port, addr := range public {
		out[port] = addr
	}
	for i, port := range zero {
		out[port] = addrs[i]
	}
	return out, nil
}

// Instances returns the running instances of service, oldest first.
func (c *Cluster) Instances(service string) []*Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Instance(nil), c.instances[service]...)
}

// All returns every instance, in the order the services start.
func (c *Cluster) All() []*Instance {
	var out []*Instance
	for _, s := range Services {
		out = append(out, c.Instances(s)...)
	}
	return out
}

// PIDs are the process ids of every running instance and of the
// gateway's nginx master (its workers are its children), for measuring
// what the processes cost.
func (c *Cluster) PIDs() []int {
	var out []int
	for _, in := range c.All() {
		if pid := in.Pid(); pid != 0 {
			out = append(out, pid)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gateway != nil && !c.gateway.proc.Exited() {
		out = append(out, c.gateway.proc.Pid)
	}
	return out
}

// Brokers are the Kafka brokers' addresses.
func (c *Cluster) Brokers() []string {
	if c.kafka == nil {
		return nil
	}
	return c.kafka.Addrs()
}

// Kafka is the broker cluster, for drills that stop or kill a broker.
func (c *Cluster) Kafka() *kraft.Cluster { return c.kafka }

// DatabaseURL is the database every service uses.
func (c *Cluster) DatabaseURL() string { return c.pg.URL() }

// BuilderURL is the dev builder's JSON-RPC (eth_sendBundle, evm_mine).
func (c *Cluster) BuilderURL() string { return c.devnet.BuilderURL }

// ChainURL is the dev chain's JSON-RPC.
func (c *Cluster) ChainURL() string { return c.devnet.ChainURL }

// Chain is the dev chain, for tests that fund wallets or mine.
func (c *Cluster) Chain() *devchain.Chain { return c.devnet.chain }

// Genesis is the time of slot 0 of the dev chain's clock.
func (c *Cluster) Genesis() time.Time { return c.genesis }

// SlotLength is the dev chain's slot.
func (c *Cluster) SlotLength() time.Duration { return c.cfg.SlotLength }

// REST is the gateway's REST base URL.
func (c *Cluster) REST() string { return "http://" + c.cfg.Public["8080"] }

// Public returns the gateway's address for a public port of nginx.conf.
func (c *Cluster) Public(port string) string { return c.cfg.Public[port] }

// DataDir is the run's directory.
func (c *Cluster) DataDir() string { return c.cfg.DataDir }

// StopPostgres stops the database (a fast shutdown, as an operator's
// restart does); StartPostgres starts it again on the same port and data.
func (c *Cluster) StopPostgres(ctx context.Context) error {
	if c.pg == nil {
		return errors.New("cluster: postgres is not running")
	}
	err := c.pg.Stop(ctx)
	c.pg = nil
	return err
}

// StartPostgres starts the database again after StopPostgres.
func (c *Cluster) StartPostgres(ctx context.Context) error { return c.startPostgres(ctx) }

// Close stops everything in order: the gateway stops taking requests, the
// edges drain, the matchers and settlers commit what they finished, then
// the outside world, the brokers and the database go. It reports every
// instance that had to be killed.
func (c *Cluster) Close() error {
	var errs []error
	c.mu.Lock()
	g := c.gateway
	c.mu.Unlock()
	if g != nil {
		g.stop(10 * time.Second)
	}
	for i := len(Services) - 1; i >= 0; i-- {
		for _, in := range c.Instances(Services[i]) {
			errs = append(errs, in.Stop(StopGrace))
		}
	}
	if c.devnet != nil {
		c.devnet.close()
	}
	if c.pool != nil {
		c.pool.Close()
	}
	if c.kafka != nil {
		errs = append(errs, stopBrokers(c.kafka))
	}
	if c.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, c.pg.Stop(ctx))
		cancel()
	}
	return errors.Join(errs...)
}

// stopBrokers stops the brokers all at once, as `docker compose down`
// does. One after the other, the last broker could not finish its
// controlled shutdown: the controller quorum it reports to has gone with
// the others.
func stopBrokers(k *kraft.Cluster) error {
	nodes := k.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.Stop(kraft.StopTimeout)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
