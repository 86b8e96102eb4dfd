// Command settler owns the ledger and its schema. `settler -migrate`
// applies the schema's migrations and exits (the migrate step of
// docker-compose); without it the settler applies them at start and then
// applies ledger commands and funding events until stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/process"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/schema"
)

var migrateOnly = flag.Bool("migrate", false, "apply the schema migrations and exit")

func main() {
	os.Exit(process.Main("settler", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	applied, err := postgres.Migrate(ctx, p.Pool, schema.Migrations())
	if err != nil {
		return nil, nil, err
	}
	p.Log.Info("migrations applied", "new", applied)
	if *migrateOnly {
		fmt.Fprintf(os.Stdout, "applied %d new migrations\n", len(applied))
		return nil, nil, process.ErrFinished
	}
	cfg, wcfg := settler.ConfigFromEnv(r), settler.WithdrawalConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	cfg.Brokers, cfg.KafkaCompression = p.Common.KafkaBrokers, p.Common.KafkaCompression
	wcfg.ChainID = p.Common.Environment.ChainID
	s, err := settler.New(ctx, cfg, p.Pool, p.Log)
	if err != nil {
		return nil, nil, err
	}
	if err := s.RegisterMetrics(p.Registry); err != nil {
		s.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error {
		defer s.Close()
		return s.Run(ctx)
	}
	loops := []func(context.Context) error{run}
	if exec, err := withdrawalExecutor(ctx, p, wcfg); err != nil {
		return nil, nil, err
	} else if exec != nil {
		loops = append(loops, exec.Run)
	}
	return nil, loops, nil
}

// withdrawalExecutor pays withdrawals when CHAIN_RPC_URL is set.
func withdrawalExecutor(ctx context.Context, p *process.Process, cfg settler.WithdrawalConfig) (*settler.Executor, error) {
	if cfg.ChainRPCURL == "" {
		p.Log.Warn("CHAIN_RPC_URL is not set: withdrawals are debited but not paid")
		return nil, nil
	}
	client, err := ethclient.DialContext(ctx, cfg.ChainRPCURL)
	if err != nil {
		return nil, fmt.Errorf("CHAIN_RPC_URL: %w", err)
	}
	return settler.NewExecutor(cfg, client, p.Pool, p.Kafka, p.Log, p.Registry)
}
