package inclusions_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/platform/metricstest"
)

// measured is a watcher like env.watcher whose metrics are on a fresh
// registry.
func (e *env) measured(t *testing.T, confirmations uint64) (*inclusions.Watcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := inclusions.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return inclusions.New(inclusions.Config{ChainID: chainID, PayerKey: e.payer, RefundConfirmations: confirmations,
		Resend: time.Millisecond, Metrics: m}, e.client(), e.pool, nil, quiet), reg
}

// TestMetricsFollowARefundToItsConfirmation pays a refund and reads its
// transitions, the age of the payout in flight, the head, the cursor and
// the polls back from the registry.
func TestMetricsFollowARefundToItsConfirmation(t *testing.T) {
	e := setup(t)
	w, reg := e.measured(t, 2)
	payouts := func(state string) float64 {
		return metricstest.Value(t, reg, "orderflow_refund_payouts_total", "state", state)
	}
	step(t, w)
	e.backrun(t)
	e.mine(t, w, 3) // the backrun's block and its two confirmations: paid
	if got := e.refunds(t); len(got) != 1 || got[0].Status != "PAID" {
		t.Fatalf("refunds %+v, want one PAID", got)
	}
	if p, s := payouts("paying"), payouts("paid"); p != 1 || s != 1 {
		t.Fatalf("%v paying, %v paid; want 1 and 1", p, s)
	}
	step(t, w)
	if age := metricstest.Value(t, reg, "orderflow_refunds_oldest_unconfirmed_age_seconds"); age <= 0 {
		t.Fatalf("oldest unconfirmed age %v with a payout in flight", age)
	}
	e.mine(t, w, 2)
	if got := e.refunds(t); got[0].Status != "CONFIRMED" {
		t.Fatalf("refund %+v, want CONFIRMED", got[0])
	}
	if n := payouts("confirmed"); n != 1 {
		t.Fatalf("%v confirmed, want 1", n)
	}
	for _, state := range []string{"failed", "orphaned"} {
		if n := payouts(state); n != 0 {
			t.Fatalf("%v %s with none", n, state)
		}
	}
	if age := metricstest.Value(t, reg, "orderflow_refunds_oldest_unconfirmed_age_seconds"); age != 0 {
		t.Fatalf("oldest unconfirmed age %v with every payout confirmed", age)
	}
	head, err := e.client().BlockNumber(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chain_head_block", "chain_processed_block"} {
		if n := metricstest.Value(t, reg, name, "watcher", "orderflow"); n != float64(head) {
			t.Fatalf("%s = %v, want the head %d (the watcher applies every block)", name, n, head)
		}
	}
	if n := metricstest.Value(t, reg, "chain_watcher_polls_total", "watcher", "orderflow", "outcome", "ok"); n != 7 {
		t.Fatalf("%v ok polls, want the 7 steps", n)
	}
}

// TestMetricsCountAWithdrawnRefund: a refund whose block a
// reorganisation orphans is counted as orphaned, and nothing as paid.
func TestMetricsCountAWithdrawnRefund(t *testing.T) {
	e := setup(t)
	w, reg := e.measured(t, 2)
	_, search, _ := e.orphanedBackrun(t, w)
	e.replace(t, search)
	e.mine(t, w, 5)
	if n := metricstest.Value(t, reg, "orderflow_refund_payouts_total", "state", "orphaned"); n != 1 {
		t.Fatalf("%v orphaned, want 1", n)
	}
	if n := metricstest.Value(t, reg, "orderflow_refund_payouts_total", "state", "paying"); n != 0 {
		t.Fatalf("%v paying after the refund was withdrawn", n)
	}
}
