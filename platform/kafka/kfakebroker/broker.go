// Package kfakebroker runs franz-go's kfake, an in-process broker speaking
// the real Kafka protocol, as the Kafka of the one-machine dev stack (make
// run), persisted on disk. No service binary links it: in production the
// services reach Kafka through KAFKA_BROKERS alone.
package kfakebroker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"blockspace.exchange/platform/kafka"
)

// DefaultAddr is where the one-machine stack serves Kafka.
const DefaultAddr = "127.0.0.1:9092"

// Config configures the in-process broker.
type Config struct {
	// Addr is the listen address. Default 127.0.0.1:9092. The host must be
	// 127.0.0.1 or localhost (the broker serves this machine only); port 0
	// picks a free port, which Addrs reports.
	Addr string
	// DataDir is where the broker keeps its log, topics, consumer group
	// offsets and producer state, e.g. ".data/kafka". Empty keeps
	// everything in memory, for tests.
	DataDir string
	// Logger receives the broker's warnings and errors. Nil discards them.
	Logger *slog.Logger
}

// Broker is franz-go's kfake broker speaking the real Kafka protocol, so
// the services, kcat and any other client use it like a cluster of one.
type Broker struct {
	cluster *kfake.Cluster
	log     *kfakeLogger
}

// Start starts the broker, reloading DataDir when it holds an
// earlier run, and returns once the broker answers a metadata request or
// ctx ends.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	port, err := listenPort(cfg.Addr)
	if err != nil {
		return nil, err
	}
	log := newKfakeLogger(cfg.Logger)
	opts := []kfake.Opt{
		kfake.Ports(port),
		kfake.ClusterID("blockspace-dev"),
		kfake.WithLogger(log),
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("start embedded kafka: data dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded kafka on port %d: %w", port, err)
	}
	e := &Broker{cluster: cluster, log: log}
	if err := e.waitReady(ctx); err != nil {
		e.cluster.Close()
		return nil, err
	}
	return e, nil
}

// listenPort checks the address and returns its port. kfake always binds
// 127.0.0.1, so any other host would be a silent lie.
func listenPort(addr string) (int, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("embedded kafka addr %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return 0, fmt.Errorf("embedded kafka addr %q: host must be 127.0.0.1 or localhost", addr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return 0, fmt.Errorf("embedded kafka addr %q: port must be 0 to 65535", addr)
	}
	return port, nil
}

func (e *Broker) waitReady(ctx context.Context) error {
	cl, err := kafka.NewClient(kafka.Config{Brokers: e.Addrs(), ClientID: "embedded-readiness"})
	if err != nil {
		return fmt.Errorf("start embedded kafka: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := kafka.Ping(ctx, cl); err != nil {
		return fmt.Errorf("start embedded kafka: %w", err)
	}
	return nil
}

// Addrs returns the host:port the broker listens on.
func (e *Broker) Addrs() []string { return e.cluster.ListenAddrs() }

// Close stops the broker. With a DataDir it first writes the remaining state
// (topics, committed offsets, producer ids) and syncs the log, and reports
// any error the broker met while doing so. Close is safe to call twice.
func (e *Broker) Close() error {
	e.log.startCapture()
	e.cluster.Close()
	if errs := e.log.captured(); len(errs) > 0 {
		return fmt.Errorf("close embedded kafka: %w", errors.Join(errs...))
	}
	return nil
}
