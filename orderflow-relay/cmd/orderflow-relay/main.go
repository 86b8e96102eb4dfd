// Command orderflow-relay serves the searcher WebSocket, forwards bundles
// to builders and follows the chain for inclusion and refunds. See
// docs/deploy.md and relay.ConfigFromEnv for its environment variables.
package main

import (
	"context"
	"math/big"
	"os"

	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("orderflow-relay", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := relay.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	cfg.ChainID = big.NewInt(p.Common.Environment.ChainID)
	outboxMetrics := outbox.NewMetrics(p.Pool)
	if err := p.Registry.Register(outboxMetrics); err != nil {
		return nil, nil, err
	}
	svc, err := relay.New(ctx, cfg, relay.Deps{Pool: p.Pool, Brokers: p.Common.KafkaBrokers, KafkaCompression: p.Common.KafkaCompression,
		Logger: p.Log, OutboxMetrics: outboxMetrics, Registry: p.Registry})
	if err != nil {
		return nil, nil, err
	}
	if err := svc.RegisterMetrics(p.Registry); err != nil {
		svc.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error { defer svc.Close(); return svc.Run(ctx) }
	return []process.Server{{Addr: cfg.Addr, Handler: svc.Handler()}}, []func(context.Context) error{run}, nil
}
