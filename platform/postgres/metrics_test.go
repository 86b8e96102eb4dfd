package postgres_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/postgres/pgtest"
)

// TestPoolCollectorFollowsThePool holds connections of a real pool and
// reads them back by state. On a pool with no idle connection an acquire
// waits for one to be dialled, which is what the wait counters count.
func TestPoolCollectorFollowsThePool(t *testing.T) {
	pool := pgtest.New(t, nil)
	pool.Reset() // no idle connection left by the migrations
	reg := prometheus.NewRegistry()
	reg.MustRegister(postgres.NewPoolCollector(pool))
	ctx := t.Context()
	before := metricstest.Gather(t, reg)

	a, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	got := metricstest.Gather(t, reg)
	a.Release()

	want := map[string]float64{
		`postgres_pool_connections{state="acquired"}`:     1,
		`postgres_pool_connections{state="idle"}`:         1,
		`postgres_pool_connections{state="constructing"}`: 0,
		"postgres_pool_max_connections":                   float64(pool.Config().MaxConns),
		"postgres_pool_acquires_total":                    before["postgres_pool_acquires_total"] + 2,
		"postgres_pool_waits_total":                       before["postgres_pool_waits_total"] + 2,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
	if got["postgres_pool_wait_seconds_total"] <= before["postgres_pool_wait_seconds_total"] {
		t.Errorf("wait seconds did not grow: %v then %v", before["postgres_pool_wait_seconds_total"], got["postgres_pool_wait_seconds_total"])
	}
}
