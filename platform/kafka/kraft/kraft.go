// Package kraft runs Apache Kafka as local processes in KRaft mode, each node
// a combined broker and controller, from the jars scripts/ensure-kafka.sh
// resolves from Maven Central. Tests start a single node of their own;
// `make run-kafka` runs the dev stack on one; a replicated cluster is several
// nodes voting in one controller quorum.
//
// A node listens on loopback only, keeps its data, server.properties and log
// under Config.Dir/node-<id>, and cannot outlive the process that started it
// (a parent-death signal). Nodes can be stopped, killed, paused and started
// again on the same ports and data, which is how tests crash the broker.
//
// A node's first start copies its log directory from a storage template,
// formatted once per machine by Kafka's storage tool and kept in
// Config.Cache, with the cluster's, the node's and the directory's ids
// written anew: the tool is a JVM of its own, and tests start over a
// hundred brokers. The JVMs map a class-data sharing archive of the
// broker's classes when Config.Cache has one (TrainArchive makes it;
// scripts/ensure-kafka.sh runs that), which takes about 40% off the CPU a
// broker needs to start.
package kraft

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Version is the Apache Kafka release the project runs: deploy/kafka/pom.xml
// resolves it and docker-compose.yml runs its image.
const Version = "4.1.1"

// Config describes a cluster of local nodes.
type Config struct {
	// Dir holds one directory per node (node-1, node-2, ...) with its log
	// directory, server.properties and server.log. Required. Starting a
	// cluster on a Dir that holds an earlier run's data resumes it.
	Dir string
	// Libs is the directory of the broker's jars. Default: $KAFKA_LIBS,
	// else .cache/kafka/<Version>/libs of the repository holding the
	// working directory.
	Libs string
	// Cache holds what the clusters of a machine share: the storage
	// templates new nodes' log directories are copied from and the JVM's
	// class archives. Default: the directory above Libs,
	// .cache/kafka/<Version>.
	Cache string
	// Java is the java launcher. Default: java on PATH.
	Java string
	// Nodes is how many nodes form the cluster, each a broker and a voter
	// of the controller quorum. Default 1.
	Nodes int
	// Addrs are the client listeners, host:port on loopback, one per node.
	// Default: free ports, chosen again if one is taken before the node
	// binds it.
	Addrs []string
	// Props are server properties set on every node, over the defaults
	// (see properties).
	Props map[string]string
	// Heap is the JVM's maximum heap of each node. Default 512m.
	Heap string
	// QuickStart trades the JVM's peak throughput for start-up time and
	// CPU (client JIT only, serial GC): for tests, which start many
	// short-lived brokers.
	QuickStart bool
	// StartTimeout bounds one node's start, from launching the JVM to its
	// broker answering. Default 3m: a JVM started while the tests compile
	// with -race on two cores has taken 90 s.
	StartTimeout time.Duration

	classPath  string // the jars of Libs
	archive    string // the class archive the JVMs map, if any
	archiveOut string // where the JVM writes its classes at exit, when training
}

// DefaultHeap is each node's JVM heap unless Config.Heap says otherwise.
const DefaultHeap = "512m"

// DefaultStartTimeout bounds a node's start unless Config.StartTimeout says
// otherwise.
const DefaultStartTimeout = 3 * time.Minute

func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, errors.New("kraft: config: Dir is empty")
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Nodes < 0 || c.Nodes > 9 {
		return c, fmt.Errorf("kraft: config: %d nodes; want 1 to 9", c.Nodes)
	}
	if len(c.Addrs) != 0 && len(c.Addrs) != c.Nodes {
		return c, fmt.Errorf("kraft: config: %d addresses for %d nodes", len(c.Addrs), c.Nodes)
	}
	for _, a := range c.Addrs {
		if err := loopback(a); err != nil {
			return c, fmt.Errorf("kraft: config: %w", err)
		}
	}
	if c.Heap == "" {
		c.Heap = DefaultHeap
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	var err error
	if c.Libs == "" {
		c.Libs, err = FindLibs()
	} else {
		c.Libs, err = checkLibs(c.Libs)
	}
	if err != nil {
		return c, err
	}
	if c.classPath, err = classPath(c.Libs); err != nil {
		return c, err
	}
	if c.Cache == "" {
		c.Cache = filepath.Dir(c.Libs)
	}
	if c.Java == "" {
		if c.Java, err = exec.LookPath("java"); err != nil {
			return c, errors.New("kraft: config: no java on PATH; run scripts/ensure-kafka.sh (make test does)")
		}
	}
	return c, nil
}

// loopback checks that addr is host:port with a loopback host and a port.
func loopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return fmt.Errorf("address %q: host must be 127.0.0.1 or localhost", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("address %q: port must be 0 to 65535", addr)
	}
	return nil
}

// ErrNoLibs means the broker's jars are not on this machine.
var ErrNoLibs = errors.New("kraft: no Apache Kafka jars; run scripts/ensure-kafka.sh (make test does)")

// FindLibs returns the directory of the broker's jars: $KAFKA_LIBS when set,
// else .cache/kafka/<Version>/libs of the nearest directory upward from the
// working directory that has go.work (the repository root).
func FindLibs() (string, error) {
	if dir := os.Getenv("KAFKA_LIBS"); dir != "" {
		return checkLibs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("kraft: find libs: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return checkLibs(filepath.Join(dir, ".cache", "kafka", Version, "libs"))
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("%w (no go.work above %s; or set KAFKA_LIBS)", ErrNoLibs, wd)
		}
	}
}

func checkLibs(dir string) (string, error) {
	jar := filepath.Join(dir, "kafka_2.13-"+Version+".jar")
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("%w (%s is missing)", ErrNoLibs, jar)
	}
	return dir, nil
}

// newClusterID returns a random cluster id in the form the storage tool
// takes: 16 bytes, URL-safe base64 without padding.
func newClusterID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// portSet holds loopback listeners on ports the kernel chose, so that
// each port it hands out while they are open is a new one.
type portSet []net.Listener

// take asks the kernel for a loopback port nobody listens on and holds it.
// Another process may take it once released, before the broker binds it;
// Start then tries again.
func (s *portSet) take() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("kraft: free port: %w", err)
	}
	*s = append(*s, l)
	return l.Addr().(*net.TCPAddr).Port, nil
}

// release closes every held listener.
func (s *portSet) release() {
	for _, l := range *s {
		l.Close()
	}
	*s = nil
}

// properties is a node's server.properties: the cluster's shape, then the
// settings the services rely on (docs/deploy.md "Broker settings"), then
// Config.Props.
func properties(c Config, n *Node, voters string) string {
	rf := strconv.Itoa(min(c.Nodes, 3))
	isr := strconv.Itoa(min(c.Nodes, 2))
	p := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(n.id),
		"controller.quorum.voters":                         voters,
		"listeners":                                        fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.controllerPort),
		"advertised.listeners":                             fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port),
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"log.dirs":                                         n.dataDir(),
		"auto.create.topics.enable":                        "false",
		"group.initial.rebalance.delay.ms":                 "0",
		"default.replication.factor":                       rf,
		"min.insync.replicas":                              isr,
		"offsets.topic.replication.factor":                 rf,
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    isr,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            isr,
	}
	maps.Copy(p, c.Props)
	var b strings.Builder
	b.WriteString("# Written by platform/kafka/kraft; rewritten at every start.\n")
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// log4j2 sends the broker's log to its standard output, which the node
// writes to server.log. Request and state-change chatter stays out.
const log4j2 = `Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: state.change.logger
        level: WARN
      - name: org.apache.kafka.controller
        level: WARN
      - name: kafka.log.LogCleaner
        level: INFO
`

// jvmArgs are the JVM's options for a node.
func jvmArgs(c Config, n *Node) []string {
	args := []string{
		"-Xmx" + c.Heap, "-Xms" + c.Heap,
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(n.dir, "log4j2.yaml"),
		"-cp", c.classPath,
	}
	// A class archive that does not fit this JVM or class path is left
	// out with a warning (-Xshare:auto, the default).
	if c.archive != "" {
		args = append(args, "-XX:SharedArchiveFile="+c.archive)
	}
	if c.archiveOut != "" {
		args = append(args, "-XX:ArchiveClassesAtExit="+c.archiveOut)
	}
	if c.QuickStart {
		args = append(args, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
	} else {
		args = append(args, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
	}
	return args
}

// TestProps are the broker settings of tests, over the defaults: few
// partitions of the internal topics (a fresh broker creates them on first
// use), segments of 1 MiB and a log cleaner that looks every 200 ms so that
// compaction happens within a test, a transaction coordinator that aborts
// timed-out transactions within a second of their timeout, and a broker
// session of 3 s, so that a killed broker started again registers within
// seconds (the controller refuses a new incarnation while the old one's
// session lasts; the default is 9 s).
var TestProps = map[string]string{
	"offsets.topic.num.partitions":                                "5",
	"transaction.state.log.num.partitions":                        "5",
	"log.segment.bytes":                                           "1048576",
	"log.cleaner.backoff.ms":                                      "200",
	"log.retention.check.interval.ms":                             "1000",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	"broker.heartbeat.interval.ms":                                "500",
	"broker.session.timeout.ms":                                   "3000",
	"num.io.threads":                                              "4",
	"num.network.threads":                                         "2",
	"background.threads":                                          "4",
}

// TestConfig is the configuration of a short-lived single-node test broker
// in dir: TestProps, a small heap and a quick start.
func TestConfig(dir string) Config {
	return Config{Dir: dir, Props: TestProps, QuickStart: true, Heap: "384m"}
}
