package deposits_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/ingress/internal/deposits"
	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// TestMetricsFollowHeadAndCursor drives the watcher over a simulated
// chain and checks that its metrics report the node's head, the block
// its cursor stands at (the head minus the confirmations) and its polls,
// failed ones included.
func TestMetricsFollowHeadAndCursor(t *testing.T) {
	e := setup(t)
	reg := prometheus.NewRegistry()
	m, err := chain.NewWatcherMetrics(reg, chain.WatcherDeposits)
	if err != nil {
		t.Fatal(err)
	}
	w, err := deposits.New(deposits.Config{ChainID: 1337, Contract: e.address, Confirmations: 2, MaxRange: 3, Metrics: m},
		e.sim.Client(), pgtest.New(t, schema.Migrations()), e.cl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e.deposit(t, 1e17)
	for range 7 {
		e.sim.Commit()
	}
	head, err := e.sim.Client().BlockNumber(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, w)
	gauge := func(name string) float64 { return metricstest.Value(t, reg, name, "watcher", "deposits") }
	polls := func(outcome string) float64 {
		return metricstest.Value(t, reg, "chain_watcher_polls_total", "watcher", "deposits", "outcome", outcome)
	}
	if got := gauge("chain_head_block"); got != float64(head) {
		t.Fatalf("chain_head_block = %v, want the node's head %d", got, head)
	}
	if got := gauge("chain_processed_block"); got != float64(head-2) {
		t.Fatalf("chain_processed_block = %v, want head - confirmations = %d", got, head-2)
	}
	// MaxRange 3 over blocks 0..head-2 takes several polls, all answered.
	ok := polls("ok")
	if want := float64((head-2)/3 + 1); ok < want {
		t.Fatalf("%v ok polls, want at least %v", ok, want)
	}
	if n := polls("error"); n != 0 {
		t.Fatalf("%v failed polls before any failure", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.Step(ctx); err == nil {
		t.Fatal("a step with a cancelled context succeeded")
	}
	if n := polls("error"); n != 1 {
		t.Fatalf("%v failed polls after one failure, want 1", n)
	}
	if n := polls("ok"); n != ok {
		t.Fatalf("a failed poll counted as ok (%v, was %v)", n, ok)
	}
}
