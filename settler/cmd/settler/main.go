// Command settler owns the ledger and its schema. `settler -migrate`
// applies the schema's migrations and exits (the migrate step of
// docker-compose); without it the settler applies them at start and runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/process"
	"blockspace.exchange/settler/schema"
)

var migrateOnly = flag.Bool("migrate", false, "apply the schema migrations and exit")

func main() {
	os.Exit(process.Main("settler", process.Needs{Postgres: true}, build))
}

func build(ctx context.Context, p *process.Process, _ *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	applied, err := postgres.Migrate(ctx, p.Pool, schema.Migrations())
	if err != nil {
		return nil, nil, err
	}
	p.Log.Info("migrations applied", "new", applied)
	if *migrateOnly {
		fmt.Fprintf(os.Stdout, "applied %d new migrations\n", len(applied))
		return nil, nil, process.ErrFinished
	}
	return nil, nil, nil
}
