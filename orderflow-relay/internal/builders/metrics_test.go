package builders

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metricstest"
	of "blockspace.exchange/platform/orderflow"
)

// TestForwardOutcomesAreCounted sends one bundle to four builders: one
// takes it, one is down twice and then takes it, one refuses it with a
// JSON-RPC error until the window ends, one never answers. Every send
// is counted once under its outcome.
func TestForwardOutcomesAreCounted(t *testing.T) {
	up, flaky, refusing, dead := newFakeBuilder(t), newFakeBuilder(t), newFakeBuilder(t), newFakeBuilder(t)
	f, _, advance := clocked(t, up, flaky, refusing, dead)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Metrics = m
	flaky.setDown(2)
	refusing.setRefuse(1 << 20)
	dead.setDown(1 << 20)
	forwards := func(outcome string) float64 {
		return metricstest.Value(t, reg, "orderflow_builder_forwards_total", "outcome", outcome)
	}

	handle(t, f, searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 1, 0)}}))
	if a, r := forwards("accepted"), forwards("retried"); a != 1 || r != 3 {
		t.Fatalf("first pass: %v accepted, %v retried; want 1 and 3", a, r)
	}
	for range 100 {
		if len(f.retries) == 0 {
			break
		}
		advance(retryMax)
		handle(t, f)
	}
	if len(f.retries) != 0 {
		t.Fatal("retries left after the window")
	}
	if n := forwards("accepted"); n != 2 {
		t.Fatalf("%v accepted, want 2 (the builder up and the one back after two failures)", n)
	}
	if n := forwards("rejected"); n != 1 {
		t.Fatalf("%v rejected, want 1", n)
	}
	if n := forwards("failed"); n != 1 {
		t.Fatalf("%v failed, want 1", n)
	}
	// Every failed send but the last of each builder was tried again.
	want := float64(2 + refusing.hits() - 1 + dead.hits() - 1)
	if n := forwards("retried"); n != want || refusing.hits() < 2 {
		t.Fatalf("%v retried, want %v (%d sends refused, %d unanswered)", n, want, refusing.hits(), dead.hits())
	}
}
