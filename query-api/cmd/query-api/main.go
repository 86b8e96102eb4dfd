// Command query-api serves the read side of the REST interface. See
// docs/deploy.md and queryapi.ConfigFromEnv for its environment variables.
package main

import (
	"context"
	"os"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/process"
	queryapi "blockspace.exchange/query-api"
)

func main() {
	os.Exit(process.Main("query-api", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := queryapi.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	cfg.Environment = p.Common.Environment
	cfg.Kafka = kafka.Config{Brokers: p.Common.KafkaBrokers, Compression: p.Common.KafkaCompression}
	metrics, err := httpx.NewMetrics(p.Registry, "query-api")
	if err != nil {
		return nil, nil, err
	}
	svc, err := queryapi.New(ctx, cfg, queryapi.Deps{Pool: p.Pool, Logger: p.Log, Metrics: metrics, DBErr: p.DBErr})
	if err != nil {
		return nil, nil, err
	}
	if err := svc.RegisterMetrics(p.Registry); err != nil {
		return nil, nil, err
	}
	return []process.Server{
		{Addr: cfg.Addr, Handler: svc.Handler()},
		{Addr: cfg.OrderflowAddr, Handler: queryapi.NewOrderflow(p.Pool, 0, p.Log)},
	}, []func(context.Context) error{svc.Run}, nil
}
