package settler_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// TestMetricsCountWhatWasApplied runs a settler over deposits, one of
// them published twice, and a record that is not an envelope, and reads
// its metrics: applied, rejected and duplicates by kind, batches, and a
// lag of zero once everything is applied.
func TestMetricsCountWhatWasApplied(t *testing.T) {
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	bad := &kgo.Record{Topic: topics.FundingEvents, Key: []byte("x"), Value: []byte("not json")}
	produce(t, producer, []*kgo.Record{bad, depositRecord(t, 1, 1, "1"), depositRecord(t, 1, 1, "1"), depositRecord(t, 2, 2, "1")})
	s, stop := startSettler(t, t.Context(), b.Addrs(), pool, 0)
	reg := prometheus.NewRegistry()
	if err := s.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "all four records", func() bool {
		return metricstest.Gather(t, reg)[`kafka_consumer_records_total{group="settler",topic="funding-events"}`] == 4
	})

	got := metricstest.Gather(t, reg)
	want := map[string]float64{
		`settler_applied_total{consumer="ledger",kind="deposit"}`: 2,
		`settler_rejected_total{consumer="ledger",kind="other"}`:  1,
		`settler_duplicates_total{consumer="ledger"}`:             1,
		`settler_batch_records_sum{consumer="ledger"}`:            4,
		`settler_apply_latency_seconds_count{consumer="ledger"}`:  4,
		`settler_batch_retries_total{consumer="ledger"}`:          0,
		// Series of the fixed label sets exist from the start, at 0.
		`settler_applied_total{consumer="ledger",kind="transfer"}`:      0,
		`settler_rejected_total{consumer="trading",kind="fill"}`:        0,
		`settler_transaction_duration_seconds_count{consumer="ledger"}`: got[`settler_batches_total{consumer="ledger"}`],
	}
	for name, w := range want {
		if v, ok := got[name]; !ok || v != w {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, w)
		}
	}
	if got[`settler_batches_total{consumer="ledger"}`] < 1 {
		t.Errorf("no batch counted: %v", got)
	}
	lags := 0
	for name, v := range got {
		if strings.HasPrefix(name, `kafka_consumer_lag_records{group="settler",`) {
			lags++
			if v != 0 {
				t.Errorf("%s = %v after everything was applied, want 0", name, v)
			}
		}
	}
	if lags == 0 {
		t.Errorf("no lag reported for the partitions applied:\n%s", metricstest.Dump(got))
	}
	stop()
}
