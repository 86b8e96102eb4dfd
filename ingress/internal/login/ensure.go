package login

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnsureUser returns the user of a lower-case address, creating it with
// its accounts as a first login does. The dev stack uses it to set up its
// demo user.
func EnsureUser(ctx context.Context, pool *pgxpool.Pool, addr, name string) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		id, err = ensureUser(ctx, tx, addr, name)
		return err
	})
	return id, err
}
