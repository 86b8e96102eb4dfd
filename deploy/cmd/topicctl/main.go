// Command topicctl applies the topic catalog to a Kafka cluster and raises
// the partition count of slot-partitioned topics without moving live
// markets:
//
//	topicctl -brokers kafka:9092 apply
//	topicctl -brokers kafka:9092 list
//	topicctl -brokers kafka:9092 raise -topic orders -partitions 32 -current-slot 11000000
//
// apply creates missing topics and aligns configs; it never changes a
// partition count. raise grows the topic and every topic that shares its
// slot layout, then publishes the layout epoch that starts beyond the slots
// that may already have a market. docs/topics.md describes the catalog.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
