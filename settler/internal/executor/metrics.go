package executor

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/metrics"
)

// Outcomes the executor publishes (withdrawals_total's state).
const (
	stateSubmitted = "submitted"
	stateConfirmed = "confirmed"
	stateFailed    = "failed"
)

// openStatuses names the statuses of open requests (withdrawals_open's
// status): 1 debited, 2 submitted.
var openStatuses = map[int]string{1: "debited", 2: "submitted"}

// Metrics are the executor's: its chain metrics (watcher "withdrawals"),
// the outcomes it published, and the open requests it found at its last
// round. One set serves every executor of a process; a nil *Metrics
// records nothing.
type Metrics struct {
	chain    *chain.WatcherMetrics
	outcomes *prometheus.CounterVec
	open     *prometheus.GaugeVec
	oldest   prometheus.Gauge

	// mu guards counted: the outcomes counted for each request still
	// open. A round may publish an outcome again while the settler has
	// not applied it yet (the request is still open); it is counted once.
	// found forgets the requests no longer open, so the set holds at most
	// the open requests.
	mu      sync.Mutex
	counted map[int64]map[string]bool
}

// NewMetrics registers the executor's metrics on reg, or reuses those
// registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	cm, err := chain.NewWatcherMetrics(reg, chain.WatcherWithdrawals)
	if err != nil {
		return nil, err
	}
	outcomes, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "withdrawals_total",
		Help: "Withdrawal outcomes the executor published, by state (submitted, confirmed, failed)."},
		[]string{"state"}, metrics.Values(stateSubmitted, stateConfirmed, stateFailed)...)
	if err != nil {
		return nil, err
	}
	open, err := metrics.GaugeVec(reg, prometheus.GaugeOpts{Name: "withdrawals_open",
		Help: "Open withdrawal requests of the executor's chain at its last round, by status (debited, submitted)."},
		[]string{"status"}, metrics.Values(openStatuses[1], openStatuses[2])...)
	if err != nil {
		return nil, err
	}
	oldest, err := metrics.Gauge(reg, prometheus.GaugeOpts{Name: "withdrawals_oldest_unconfirmed_age_seconds",
		Help: "Age of the oldest open withdrawal request at the executor's last round (0 when none)."})
	if err != nil {
		return nil, err
	}
	return &Metrics{chain: cm, outcomes: outcomes, open: open, oldest: oldest, counted: map[int64]map[string]bool{}}, nil
}

func (m *Metrics) chainMetrics() *chain.WatcherMetrics {
	if m == nil {
		return nil
	}
	return m.chain
}

// published counts request id's outcome once its event is on the log,
// the first time this process publishes it.
func (m *Metrics) published(state string, id int64, err error) error {
	if m == nil || err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counted[id] == nil {
		m.counted[id] = map[string]bool{}
	}
	if !m.counted[id][state] {
		m.counted[id][state] = true
		m.outcomes.WithLabelValues(state).Inc()
	}
	return nil
}

// found records the open requests a round read.
func (m *Metrics) found(reqs []request, now time.Time) {
	if m == nil {
		return
	}
	counts := map[int]int{}
	var oldest time.Duration
	open := make(map[int64]bool, len(reqs))
	for _, r := range reqs {
		counts[r.status]++
		oldest = max(oldest, now.Sub(r.created))
		open[r.id] = true
	}
	m.mu.Lock()
	for id := range m.counted {
		if !open[id] {
			delete(m.counted, id)
		}
	}
	m.mu.Unlock()
	for status, name := range openStatuses {
		m.open.WithLabelValues(name).Set(float64(counts[status]))
	}
	m.oldest.Set(oldest.Seconds())
}
