// Command cluster runs the production shape of the exchange on this
// machine (make run-cluster): three Apache Kafka brokers, PostgreSQL, every
// service as its own process, two matchers and two query-api instances,
// and the nginx gateway. See docs/deploy.md "The production shape on one
// machine".
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"blockspace.exchange/deploy/cluster"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/serve"
)

func main() {
	r := config.FromEnv()
	log := serve.NewLogger(r.LogLevel("LOG_LEVEL", slog.LevelInfo))
	cfg, err := configFromEnv(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(2)
	}
	cfg.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		log.Error("start", "error", err)
		os.Exit(1)
	}
	c.PrintBanner(os.Stdout)
	<-ctx.Done()
	stop() // a second signal ends the runner at once, and its children with it
	log.Info("stopping the cluster")
	if err := c.Close(); err != nil {
		log.Error("stop", "error", err)
		os.Exit(1)
	}
	log.Info("stopped")
}

// configFromEnv reads the runner's own variables (docs/deploy.md "The
// production shape on one machine"): the gateway's addresses (the names
// make run uses), the brokers', the instance counts and the dev chain's
// clock and blocks.
func configFromEnv(r *config.Reader) (cluster.Config, error) {
	cfg := cluster.Config{
		DataDir: r.String("DATA_DIR", ""),
		Public: map[string]string{
			"8080": r.String("HTTP_ADDR", "127.0.0.1:8080"),
			"8081": r.String("ORIGINATOR_ADDR", "127.0.0.1:8081"),
			"8082": r.String("SEARCHER_ADDR", "127.0.0.1:8082"),
			"8083": r.String("ORDERFLOW_ADDR", "127.0.0.1:8083"),
		},
		Instances: map[string]int{
			"matcher":   r.Int("MATCHERS", 2, 1, 16),
			"query-api": r.Int("QUERY_APIS", 2, 1, 8),
			"settler":   r.Int("SETTLERS", 1, 1, 8),
		},
	}
	switch raw := r.String("DEV_BLOCK_INTERVAL", "1s"); raw {
	case "0", "0s":
		cfg.ManualBlocks = true
	default:
		cfg.BlockInterval = r.Duration("DEV_BLOCK_INTERVAL", time.Second, 50*time.Millisecond, time.Minute)
	}
	cfg.SlotLength = r.Duration("SLOT_LENGTH", 2*time.Second, environment.MinSlotLength, time.Minute)
	if addrs := r.List("KAFKA_ADDRS"); len(addrs) != 0 {
		cfg.KafkaAddrs = addrs
	}
	return cfg, r.Err()
}
