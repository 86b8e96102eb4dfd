package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the outbox's (docs/operations.md "Metrics"). The backlog is
// read at scrape time with one query of the outbox table, so one Metrics
// serves every Outbox of a process on one database (the dev stack's
// ingress and orderflow relay share it): make it once per registry and
// set it as each Outbox's Metrics.
type Metrics struct {
	pool      *pgxpool.Pool
	pending   *prometheus.Desc
	oldest    *prometheus.Desc
	published prometheus.Counter
	failures  prometheus.Counter
}

// backlogTimeout bounds the scrape's query; when Postgres does not answer
// in time the scrape shows no backlog rather than waiting.
const backlogTimeout = time.Second

// NewMetrics returns the metrics of the outbox table of pool; register
// them.
func NewMetrics(pool *pgxpool.Pool) *Metrics {
	return &Metrics{
		pool:    pool,
		pending: prometheus.NewDesc("outbox_pending_rows", "Records stored in the outbox and not yet published.", nil, nil),
		oldest: prometheus.NewDesc("outbox_oldest_pending_age_seconds",
			"Age of the oldest record stored in the outbox and not yet published; 0 when none.", nil, nil),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_published_total", Help: "Outbox rows the relay published and deleted.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "outbox_publish_failures_total", Help: "Outbox relay rounds that could not publish.",
		}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.pending
	ch <- m.oldest
	m.published.Describe(ch)
	m.failures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.published.Collect(ch)
	m.failures.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	var rows int64
	var age float64
	err := m.pool.QueryRow(ctx, `
		SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created)), 0)::float8 FROM outbox`).Scan(&rows, &age)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(rows))
	ch <- prometheus.MustNewConstMetric(m.oldest, prometheus.GaugeValue, max(age, 0))
}

// relayed counts one relay round's outcome; a nil Metrics counts nothing.
func (m *Metrics) relayed(n int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.failures.Inc()
		return
	}
	m.published.Add(float64(n))
}
