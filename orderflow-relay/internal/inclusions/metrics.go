package inclusions

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/metrics"
	"blockspace.exchange/topics"
)

// Metrics are the watcher's: its chain metrics (watcher "orderflow"),
// the refund payout transitions and the age of the oldest payout in
// flight. One set serves every watcher of a process; a nil *Metrics
// records nothing.
type Metrics struct {
	chain   *chain.WatcherMetrics
	payouts *prometheus.CounterVec
	oldest  prometheus.Gauge
}

// payoutStates are the values of orderflow_refund_payouts_total's state:
// PAYING (a payout signed and stored), and the refund events PAID,
// CONFIRMED, FAILED and ORPHANED.
var payoutStates = []string{"paying", "paid", "confirmed", "failed", "orphaned"}

// NewMetrics registers the watcher's metrics on reg, or reuses those
// another watcher registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	cm, err := chain.NewWatcherMetrics(reg, chain.WatcherOrderflow)
	if err != nil {
		return nil, err
	}
	payouts, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "orderflow_refund_payouts_total",
		Help: "Refund payout transitions, by the state reached (paying, paid, confirmed, failed, orphaned)."},
		[]string{"state"}, metrics.Values(payoutStates...)...)
	if err != nil {
		return nil, err
	}
	oldest, err := metrics.Gauge(reg, prometheus.GaugeOpts{Name: "orderflow_refunds_oldest_unconfirmed_age_seconds",
		Help: "Age of the oldest refund in PAYING or PAID, since it was learned (0 when none)."})
	if err != nil {
		return nil, err
	}
	return &Metrics{chain: cm, payouts: payouts, oldest: oldest}, nil
}

// chainMetrics is nil-safe: a watcher without metrics records nothing.
func (m *Metrics) chainMetrics() *chain.WatcherMetrics {
	if m == nil {
		return nil
	}
	return m.chain
}

// decided counts the refund transitions among committed events.
func (m *Metrics) decided(evs events) {
	if m == nil {
		return
	}
	for _, e := range evs {
		if rf, ok := e.payload.(topics.OrderflowRefund); ok && rf.Status != topics.RefundPending {
			m.payouts.WithLabelValues(strings.ToLower(rf.Status)).Inc()
		}
	}
}

// paying counts payouts signed and stored.
func (m *Metrics) paying(n int) {
	if m != nil {
		m.payouts.WithLabelValues("paying").Add(float64(n))
	}
}

func (m *Metrics) oldestUnconfirmed(seconds float64) {
	if m != nil {
		m.oldest.Set(seconds)
	}
}
