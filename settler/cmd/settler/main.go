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
	cfg := settler.Config{
		Brokers:  p.Common.KafkaBrokers,
		Group:    r.String("SETTLER_GROUP", settler.DefaultGroup),
		MaxBatch: r.Int("SETTLER_MAX_BATCH", settler.DefaultMaxBatch, 1, 100_000),
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	s, err := settler.New(ctx, cfg, p.Pool, p.Log)
	if err != nil {
		return nil, nil, err
	}
	run := func(ctx context.Context) error {
		defer s.Close()
		return s.Run(ctx)
	}
	return nil, []func(context.Context) error{run}, nil
}
