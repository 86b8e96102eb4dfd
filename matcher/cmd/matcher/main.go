// Command matcher runs one matcher instance. See docs/deploy.md for the
// shared environment and matcher.ConfigFromEnv for its own variables.
package main

import (
	"context"
	"os"

	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("matcher", process.Needs{Kafka: true}, build))
}

func build(_ context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := matcher.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	cfg.Kafka.Brokers, cfg.Kafka.Compression, cfg.Logger = p.Common.KafkaBrokers, p.Common.KafkaCompression, p.Log
	m, err := matcher.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := m.RegisterMetrics(p.Registry); err != nil {
		m.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error {
		defer m.Close()
		return m.Run(ctx)
	}
	return nil, []func(context.Context) error{run}, nil
}
