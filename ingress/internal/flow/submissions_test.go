package flow

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/metricstest"
	of "blockspace.exchange/platform/orderflow"
)

// TestSubmissionsCounted sends originator submissions that are accepted,
// repeated, malformed, of an unknown method and over a sender's limit,
// and reads each back from orderflow_submissions_total.
func TestSubmissionsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	subs, err := of.NewSubmissions(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv, published := originatorServer(t, Config{RatePerSender: ratelimit.Rate{PerMinute: 1, Burst: 3}, Submissions: subs})
	key := newKey(t)
	tx := signedTx(t, key, 0)
	assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, tx, nil))
	assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, tx, nil)) // the same again
	assertAccepted(t, post(t, srv.URL, of.MethodSendBundle, map[string]any{"txs": []string{signedTx(t, key, 1)}}, nil))
	post(t, srv.URL, MethodSendRawTransaction, "0xzz", nil)
	post(t, srv.URL, "eth_mine", "0x01", nil)
	post(t, srv.URL, MethodSendRawTransaction, signedTx(t, key, 2), nil) // the sender's fourth (a repeat takes a token too): over its burst of 3
	if n := published.count(); n != 2 {
		t.Fatalf("%d records published, want 2", n)
	}
	for _, c := range []struct {
		method, outcome string
		want            float64
	}{
		{MethodSendRawTransaction, of.OutcomeAccepted, 1},
		{MethodSendRawTransaction, of.OutcomeDuplicate, 1},
		{MethodSendRawTransaction, of.OutcomeInvalid, 1},
		{MethodSendRawTransaction, of.OutcomeRefused, 1},
		{MethodSendRawTransaction, of.OutcomeError, 0},
		{of.MethodSendBundle, of.OutcomeAccepted, 1},
		{"other", of.OutcomeInvalid, 1},
	} {
		if got := metricstest.Value(t, reg, "orderflow_submissions_total", "method", c.method, "outcome", c.outcome); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.outcome, got, c.want)
		}
	}
}
