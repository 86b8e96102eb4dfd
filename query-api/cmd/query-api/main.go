// Command query-api serves the read side of the REST interface. See
// docs/deploy.md for its environment variables.
package main

import (
	"context"
	"os"
	"time"

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
	cfg := queryapi.Config{
		Environment:        p.Common.Environment,
		CollateralContract: r.String("COLLATERAL_CONTRACT", ""),
		ReferenceRefresh:   r.Duration("REFERENCE_REFRESH", 5*time.Second, 100*time.Millisecond, time.Hour),
		MaxInFlight:        r.Int("MAX_IN_FLIGHT", 1024, 1, 1<<20),
		Kafka:              kafka.Config{Brokers: p.Common.KafkaBrokers, ClientID: "query-api-markets", Compression: p.Common.KafkaCompression},
	}
	addr := r.String("HTTP_ADDR", ":8080")
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
		{Addr: addr, Handler: svc.Handler()},
		{Addr: r.String("ORDERFLOW_ADDR", ":8083"), Handler: queryapi.NewOrderflow(p.Pool, 0, p.Log)},
	}, []func(context.Context) error{svc.Run}, nil
}
