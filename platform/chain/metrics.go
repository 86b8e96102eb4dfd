// Package chain holds what the services that follow an Ethereum chain
// share: the metrics of their watchers and how they follow the chain
// (confirmations, poll interval, the collateral contract's address). The
// collateral contract's binding is in collateral.
package chain

import (
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metrics"
)

// Watchers (the watcher label of the chain metrics): a fixed list.
const (
	WatcherDeposits    = "deposits"    // ingress's deposit watcher
	WatcherOrderflow   = "orderflow"   // the orderflow relay's inclusions and refunds
	WatcherWithdrawals = "withdrawals" // the settler's withdrawal executor
)

// WatcherMetrics are the metrics of one watcher of the chain: the head
// the node last reported, the highest block the watcher has applied, and
// its polls of the node. A nil *WatcherMetrics counts nothing.
type WatcherMetrics struct {
	head, processed prometheus.Gauge
	ok, failed      prometheus.Counter
}

// NewWatcherMetrics registers the chain metrics on reg (or reuses those
// registered by another watcher) and returns those of watcher.
func NewWatcherMetrics(reg prometheus.Registerer, watcher string) (*WatcherMetrics, error) {
	head, err := metrics.GaugeVec(reg, prometheus.GaugeOpts{Name: "chain_head_block",
		Help: "The chain head as the watcher last saw it."}, []string{"watcher"})
	if err != nil {
		return nil, err
	}
	processed, err := metrics.GaugeVec(reg, prometheus.GaugeOpts{Name: "chain_processed_block",
		Help: "The highest block the watcher has applied (or considers confirmed)."}, []string{"watcher"})
	if err != nil {
		return nil, err
	}
	polls, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "chain_watcher_polls_total",
		Help: "Polls of the node by the watcher, by outcome (ok, error)."}, []string{"watcher", "outcome"})
	if err != nil {
		return nil, err
	}
	return &WatcherMetrics{head: head.WithLabelValues(watcher), processed: processed.WithLabelValues(watcher),
		ok: polls.WithLabelValues(watcher, "ok"), failed: polls.WithLabelValues(watcher, "error")}, nil
}

// Head records the head the node reported.
func (m *WatcherMetrics) Head(block uint64) {
	if m != nil {
		m.head.Set(float64(block))
	}
}

// Processed records the highest block the watcher has applied.
func (m *WatcherMetrics) Processed(block uint64) {
	if m != nil {
		m.processed.Set(float64(block))
	}
}

// Poll counts one poll of the node that ended with err.
func (m *WatcherMetrics) Poll(err error) {
	switch {
	case m == nil:
	case err == nil:
		m.ok.Inc()
	default:
		m.failed.Inc()
	}
}
