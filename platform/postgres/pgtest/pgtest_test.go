package pgtest_test

import (
	"testing"
	"testing/fstest"

	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNewGivesIsolatedDatabases(t *testing.T) {
	t.Parallel()
	migrations := fstest.MapFS{"0001_items.sql": {Data: []byte("CREATE TABLE items (id int);")}}
	a := pgtest.New(t, migrations)
	b := pgtest.New(t, migrations)

	if _, err := a.Exec(t.Context(), "INSERT INTO items VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var nameA, nameB string
	var rowsB int
	if err := a.QueryRow(t.Context(), "SELECT current_database()").Scan(&nameA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(t.Context(), "SELECT current_database(), (SELECT count(*) FROM items)").Scan(&nameB, &rowsB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB {
		t.Errorf("both pools use database %s", nameA)
	}
	if rowsB != 0 {
		t.Errorf("rows in the other database = %d, want 0", rowsB)
	}
}

func TestServerStopAndStart(t *testing.T) {
	t.Parallel()
	srv := pgtest.Server(t)
	pool := srv.New(t, nil)

	steps := []struct {
		name   string
		act    func(testing.TB)
		wantUp bool
	}{
		{"running", func(testing.TB) {}, true},
		{"stopped", srv.Stop, false},
		{"started again", srv.Start, true},
	}
	for _, step := range steps {
		step.act(t)
		err := pool.Ping(t.Context())
		if up := err == nil; up != step.wantUp {
			t.Errorf("%s: ping err = %v, want up = %v", step.name, err, step.wantUp)
		}
	}
}
