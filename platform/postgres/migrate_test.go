package postgres_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/postgres/pgtest"
)

// schema is a small migration set. Its statements fail when run twice, so a
// migration applied more than once shows up as an error.
func schema() fstest.MapFS {
	return fstest.MapFS{
		"0001_accounts.sql": {Data: []byte("CREATE TABLE accounts (id bigint PRIMARY KEY);\n")},
		"0002_balances.sql": {Data: []byte("CREATE TABLE balances (account bigint REFERENCES accounts);\nCREATE INDEX ON balances (account);\n")},
		"0010_seed.sql":     {Data: []byte("INSERT INTO accounts VALUES (1), (2);\n")},
		"README.md":         {Data: []byte("not a migration")},
	}
}

var schemaFiles = []string{"0001_accounts.sql", "0002_balances.sql", "0010_seed.sql"}

func TestMigrateAppliesOnceInOrder(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, nil)
	runs := []struct {
		name string
		want []string
	}{
		{"first run applies all in order", schemaFiles},
		{"second run applies nothing", nil},
	}
	for _, run := range runs {
		got, err := postgres.Migrate(t.Context(), pool, schema())
		if err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		if !slices.Equal(got, run.want) {
			t.Errorf("%s: applied %v, want %v", run.name, got, run.want)
		}
	}
	if got := recorded(t, pool); !slices.Equal(got, schemaFiles) {
		t.Errorf("schema_migrations = %v, want %v", got, schemaFiles)
	}
}

func TestMigrateErrors(t *testing.T) {
	tests := []struct {
		name string
		// later is applied after schema() has been.
		later    fstest.MapFS
		wantErr  []string // substrings of the error
		recorded []string // schema_migrations afterwards
		absent   string   // a table the failed migration must not leave behind
	}{
		{
			name:     "changed checksum",
			later:    with(schema(), "0002_balances.sql", "CREATE TABLE balances (account bigint);\n"),
			wantErr:  []string{"0002_balances.sql", "changed"},
			recorded: schemaFiles,
		},
		{
			name: "failing migration rolls back",
			later: with(schema(), "0011_broken.sql",
				"CREATE TABLE half_done (id int);\nINSERT INTO no_such_table VALUES (1);\n"),
			wantErr:  []string{"0011_broken.sql", "line 2", "no_such_table", "42P01"},
			recorded: schemaFiles,
			absent:   "half_done",
		},
		{
			name:     "malformed file name",
			later:    with(schema(), "11_short.sql", "SELECT 1;"),
			wantErr:  []string{"11_short.sql"},
			recorded: schemaFiles,
		},
		{
			name:     "duplicate version",
			later:    with(schema(), "0010_again.sql", "SELECT 1;"),
			wantErr:  []string{"0010_again.sql", "0010_seed.sql"},
			recorded: schemaFiles,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.New(t, schema())
			_, err := postgres.Migrate(t.Context(), pool, tt.later)
			if err == nil {
				t.Fatal("Migrate() succeeded, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if got := recorded(t, pool); !slices.Equal(got, tt.recorded) {
				t.Errorf("schema_migrations = %v, want %v", got, tt.recorded)
			}
			if tt.absent != "" && tableExists(t, pool, tt.absent) {
				t.Errorf("table %s exists after the failed migration", tt.absent)
			}
		})
	}
}

func TestMigrateConcurrentMigratorsApplyEachFileOnce(t *testing.T) {
	t.Parallel()
	const migrators = 4
	url := pgtest.New(t, nil).Config().ConnString()
	results := make([][]string, migrators)
	errs := make([]error, migrators)
	var wg sync.WaitGroup
	for i := range migrators {
		// Each migrator has its own pool, as separate service replicas do.
		pool, err := postgres.Open(t.Context(), url, postgres.Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		wg.Go(func() { results[i], errs[i] = postgres.Migrate(t.Context(), pool, schema()) })
	}
	wg.Wait()

	var applied []string
	for i := range migrators {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		}
		applied = append(applied, results[i]...)
	}
	slices.Sort(applied)
	if !slices.Equal(applied, schemaFiles) {
		t.Errorf("applied across migrators = %v, want each of %v once", applied, schemaFiles)
	}
}

// with returns fsys plus one file.
func with(fsys fstest.MapFS, name, sql string) fstest.MapFS {
	fsys[name] = &fstest.MapFile{Data: []byte(sql)}
	return fsys
}

// recorded lists the names in schema_migrations in version order.
func recorded(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), "SELECT name FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func tableExists(t *testing.T, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	var exists bool
	err := pool.QueryRow(context.WithoutCancel(t.Context()), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists)
	if err != nil {
		t.Fatal(err)
	}
	return exists
}
