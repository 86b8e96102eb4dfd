// Command ingress serves the REST mutations and every other way an outside
// event enters the log. See docs/deploy.md for its environment variables.
package main

import (
	"context"
	"os"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("ingress", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := ingress.Config{
		Environment: p.Common.Environment, MaxInFlight: r.Int("MAX_IN_FLIGHT", 1024, 1, 1<<20),
		Auth: ingress.AuthConfigFromEnv(r),
	}
	if cfg.Auth.SigningKey == nil {
		r.Fail("AUTH_SIGNING_KEY_FILE or AUTH_SIGNING_KEY is required: the PEM P-256 key that signs access tokens")
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	addr := r.String("HTTP_ADDR", ":8080")
	metrics, err := httpx.NewMetrics(p.Registry, "ingress")
	if err != nil {
		return nil, nil, err
	}
	svc, err := ingress.New(ctx, cfg, ingress.Deps{
		Pool: p.Pool, Logger: p.Log, Metrics: metrics, DBErr: p.DBErr,
		Kafka: p.Kafka, KafkaErr: func() error { return p.Monitor.Err("kafka") },
	})
	if err != nil {
		return nil, nil, err
	}
	return []process.Server{{Addr: addr, Handler: svc.Handler()}}, []func(context.Context) error{svc.Run}, nil
}
