package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateLockKey is the advisory lock that serialises migrators of a database;
// the value is arbitrary but fixed forever, or old and new binaries would
// migrate at the same time.
const migrateLockKey int64 = 0x626c6f636b6d6967 // "blockmig"

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    bigint PRIMARY KEY,
	name       text NOT NULL,
	checksum   text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// Migrate applies the NNNN_name.sql files at the root of fsys that the
// database has not seen, in version order, and returns their names. For an
// embed.FS holding a migrations directory, pass fs.Sub(efs, "migrations").
//
// Each file runs in its own transaction together with its schema_migrations
// row, so a file is applied entirely or not at all; statements that cannot
// run inside a transaction (CREATE INDEX CONCURRENTLY) are not supported.
// A file already applied whose content changed is an error: the database no
// longer matches the code. Versions the database has but fsys lacks are left
// alone, so that an older binary can run against a newer schema.
//
// Concurrent migrators, in this process or others, are serialised by a
// session advisory lock; the second one finds nothing left to do.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) ([]string, error) {
	migrations, err := loadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	unlock, err := lockMigrations(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	defer unlock()
	return applyPending(ctx, conn.Conn(), migrations)
}

// lockMigrations takes the advisory lock on conn and returns its release.
// The lock belongs to the session, so the same connection must be used for
// everything in between.
func lockMigrations(ctx context.Context, conn *pgx.Conn) (func(), error) {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("migrate: take lock: %w", err)
	}
	unlock := func() {
		// A failed unlock leaves a broken session; closing it frees the lock.
		ctx := context.WithoutCancel(ctx)
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
			_ = conn.Close(ctx)
		}
	}
	return unlock, nil
}

func applyPending(ctx context.Context, conn *pgx.Conn, migrations []migration) ([]string, error) {
	if _, err := conn.Exec(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	applied, err := appliedChecksums(ctx, conn)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, m := range migrations {
		sum, ok := applied[m.version]
		if ok && sum != m.checksum {
			return done, fmt.Errorf("migrate: %s was changed after it was applied (checksum %s, applied %s); add a new migration instead", m.file, m.checksum, sum)
		}
		if ok {
			continue
		}
		if err := apply(ctx, conn, m); err != nil {
			return done, err
		}
		done = append(done, m.file)
	}
	return done, nil
}

func appliedChecksums(ctx context.Context, conn *pgx.Conn) (map[int64]string, error) {
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	applied := map[int64]string{}
	var version int64
	var checksum string
	_, err = pgx.ForEachRow(rows, []any{&version, &checksum}, func() error {
		applied[version] = checksum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	return applied, nil
}

// apply runs one file and records it in one transaction. The file is sent as
// a simple query, so it may hold many statements.
func apply(ctx context.Context, conn *pgx.Conn, m migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return withLine(m, err)
		}
		_, err := tx.Exec(ctx,
			"INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
			m.version, m.file, m.checksum)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: %s: %w", m.file, err)
	}
	return nil
}

// withLine adds the file's line to a server error that carries a position.
func withLine(m migration, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	if line := lineOf(m.sql, pgErr.Position); line > 0 {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}
