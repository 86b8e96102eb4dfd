package settler

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// The consumer label of the settler's metrics.
const (
	ledgerConsumer  = "ledger"
	tradingConsumer = "trading"
)

// kindOther is the kind of a command whose type is not in ledgerKinds.
const kindOther = "other"

// ledgerKinds is the kind label of each command type the ledger consumer
// applies; the label set is this list and kindOther.
var ledgerKinds = map[string]string{
	topics.TypeLedgerTransfer:      "transfer",
	topics.TypeLedgerWithdraw:      "withdraw",
	topics.TypeDepositObserved:     "deposit",
	topics.TypeWithdrawalSubmitted: "withdrawal_submitted",
	topics.TypeWithdrawalConfirmed: "withdrawal_confirmed",
	topics.TypeWithdrawalFailed:    "withdrawal_failed",
}

// ledgerKind is the kind label of a ledger command type.
func ledgerKind(typ string) string {
	if k, ok := ledgerKinds[typ]; ok {
		return k
	}
	return kindOther
}

// metrics are the settler's (docs/operations.md "Metrics"). They exist
// whether or not they are registered, so the consumers never check.
type metrics struct {
	batches      *prometheus.CounterVec
	batchRecords *prometheus.HistogramVec
	transaction  *prometheus.HistogramVec
	applied      *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	duplicates   *prometheus.CounterVec
	retries      *prometheus.CounterVec
	latency      *prometheus.HistogramVec
}

func newMetrics() *metrics {
	consumer := []string{"consumer"}
	m := &metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "settler_batches_total", Help: "Postgres transactions the settler committed.",
		}, consumer),
		batchRecords: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "settler_batch_records", Help: "Records in a committed batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8), // 1 .. 16384
		}, consumer),
		transaction: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "settler_transaction_duration_seconds", Help: "A batch's Postgres transaction, begin to commit.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, consumer),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "settler_applied_total", Help: "Commands and events applied, by kind.",
		}, []string{"consumer", "kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "settler_rejected_total", Help: "Commands refused by the ledger; their reason is in journal.",
		}, []string{"consumer", "kind"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "settler_duplicates_total", Help: "Records dropped because their command id was applied before.",
		}, consumer),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "settler_batch_retries_total", Help: "Batches retried after a Postgres error.",
		}, consumer),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "settler_apply_latency_seconds", Help: "From a record's Kafka timestamp to the commit that applied it.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, consumer),
	}
	return m.preset()
}

// tradingKinds are the kind labels of the trading consumer.
var tradingKinds = []string{"fill", "order_event", "market_open", "market_status"}

// preset creates every series of the fixed label sets at 0, so that a
// dashboard and the alerts see each from the start, not from its first
// event.
func (m *metrics) preset() *metrics {
	for _, c := range []string{ledgerConsumer, tradingConsumer} {
		m.batches.WithLabelValues(c)
		m.batchRecords.WithLabelValues(c)
		m.transaction.WithLabelValues(c)
		m.duplicates.WithLabelValues(c)
		m.retries.WithLabelValues(c)
		m.latency.WithLabelValues(c)
	}
	for _, k := range append(slices.Collect(maps.Values(ledgerKinds)), kindOther) {
		m.applied.WithLabelValues(ledgerConsumer, k)
		m.rejected.WithLabelValues(ledgerConsumer, k)
	}
	for _, k := range tradingKinds {
		m.applied.WithLabelValues(tradingConsumer, k)
	}
	m.rejected.WithLabelValues(tradingConsumer, "fill")
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.batches, m.batchRecords, m.transaction, m.applied, m.rejected, m.duplicates, m.retries, m.latency}
}

// committed records a batch of consumer that committed at the end of a
// transaction begun at began.
func (m *metrics) committed(consumer string, recs []*kgo.Record, began time.Time) {
	now := time.Now()
	m.batches.WithLabelValues(consumer).Inc()
	m.batchRecords.WithLabelValues(consumer).Observe(float64(len(recs)))
	m.transaction.WithLabelValues(consumer).Observe(now.Sub(began).Seconds())
	latency := m.latency.WithLabelValues(consumer)
	for _, r := range recs {
		latency.Observe(max(now.Sub(r.Timestamp), 0).Seconds())
	}
}

// count adds n to the counter of consumer and kind, if n is not zero.
func count(vec *prometheus.CounterVec, consumer, kind string, n int) {
	if n > 0 {
		vec.WithLabelValues(consumer, kind).Add(float64(n))
	}
}

// RegisterMetrics adds the settler's metrics, and the lag of its two
// consumers, to reg.
func (s *Settler) RegisterMetrics(reg prometheus.Registerer) error {
	cs := append(s.metrics.collectors(), s.ledger.lag, s.trading.lag)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("settler: register metrics: %w", err)
		}
	}
	return nil
}
