package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"blockspace.exchange/deploy/cluster"
	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/deploy/loadtest"
)

// target is the running exchange a measurement trades on: the dev stack
// in this process, or the production shape's processes (-cluster).
type target struct {
	base    string   // the REST base
	db      string   // the database
	kafka   []string // the brokers
	chain   *devchain.Chain
	dataDir string // where Postgres and the brokers keep their pid files
	// kafkaPIDs is the glob of the brokers' pid files under dataDir.
	kafkaPIDs string
	// services are the processes outside this one that serve the
	// exchange (the cluster's instances and its gateway); none for the
	// dev stack, which runs in this process.
	services func() []int
	stop     func()
}

// startTarget starts what o.kafka names: kfake or apache for the dev
// stack, cluster:<n> for the production shape with n matchers and n
// settlers.
func startTarget(ctx context.Context, o options) (target, error) {
	env := maps.Clone(stackEnv)
	env["ORDER_ANSWER_WAIT"] = o.wait
	if n, ok := clusterInstances(o.kafka); ok {
		return startCluster(ctx, env, n)
	}
	env["EMBEDDED_KAFKA"] = o.kafka
	settings := maps.Clone(commitTimeSettings)
	if o.pgstat {
		maps.Copy(settings, pgStatSettings)
	}
	configure := func(c *devstack.Config) { c.PostgresSettings = settings }
	stack, stop, err := loadtest.StartStackWith(ctx, env, configure, os.Stderr)
	if err != nil {
		return target{}, err
	}
	a := stack.Addresses()
	chain, _ := stack.Chain()
	return target{base: a.REST, db: a.Database, kafka: a.Kafka, chain: chain, dataDir: a.DataDir,
		kafkaPIDs: "kafka-apache/node-*/kafka.pid", services: func() []int { return nil }, stop: stop}, nil
}

// clusterInstances reads the instance count of a cluster:<n> target.
func clusterInstances(kafka string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(kafka, "cluster:"))
	return n, err == nil && strings.HasPrefix(kafka, "cluster:")
}

// startCluster starts the production shape with n matchers and n settlers
// (two query-api instances, one ingress, the gateway), configured as the
// dev stack is for the benchmark; MAX_IN_FLIGHT is the load commands'.
func startCluster(ctx context.Context, env map[string]string, n int) (target, error) {
	dir, err := os.MkdirTemp("", "exchange-tradebench-cluster-")
	if err != nil {
		return target{}, err
	}
	// The private Postgres runs as the postgres OS user when we are root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return target{}, err
	}
	public := map[string]string{}
	for _, port := range []string{"8080", "8081", "8082", "8083"} {
		if public[port], err = freeAddr(); err != nil {
			return target{}, err
		}
	}
	slot, err := time.ParseDuration(env["SLOT_LENGTH"])
	if err != nil {
		return target{}, err
	}
	delete(env, "SLOT_LENGTH")
	delete(env, "DEV_BLOCK_INTERVAL")
	env["MAX_IN_FLIGHT"], env["LOG_LEVEL"] = "100000", "warn"
	// The service binaries look at the chain every 2 s unless told; the
	// funding waits for deposits, so they look every 100 ms, the least
	// they accept.
	env["CHAIN_POLL"] = "100ms"
	c, err := cluster.Start(ctx, cluster.Config{
		DataDir: dir, Public: public, KafkaAddrs: []string{"", "", ""}, SlotLength: slot, ManualBlocks: true,
		Instances: map[string]int{"matcher": n, "settler": n}, Env: env,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		os.RemoveAll(dir)
		return target{}, err
	}
	fmt.Printf("cluster: %s\n", instanceList(c))
	return target{base: c.REST(), db: c.DatabaseURL(), kafka: c.Brokers(), chain: c.Chain(), dataDir: dir,
		kafkaPIDs: "kafka/node-*/kafka.pid", services: c.PIDs,
		stop: func() {
			if err := c.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "tradebench: stop the cluster:", err)
			}
			os.RemoveAll(dir)
		}}, nil
}

func instanceList(c *cluster.Cluster) string {
	var names []string
	for _, in := range c.All() {
		names = append(names, in.Name)
	}
	return strings.Join(names, ", ") + ", nginx; 3 Apache Kafka brokers"
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
