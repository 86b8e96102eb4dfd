package stream

import (
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metrics"
)

// Why a notification did not reach a socket (orderflow_stream_drops_total).
const (
	dropOverflow = "overflow" // the socket's queue was full; the socket closes
	dropClosed   = "closed"   // the socket was closing already
)

// Why a socket closed (orderflow_stream_disconnects_total): a fixed list.
const (
	disconnectOverflow = "overflow"     // its queue of notifications overflowed
	disconnectSlow     = "slow"         // a write took longer than WriteTimeout
	disconnectPing     = "ping_timeout" // nothing read for 2.5 ping intervals
	disconnectProtocol = "protocol"     // a malformed frame or a message over MaxMessage
	disconnectClosed   = "closed"       // the client closed it or the connection broke
	disconnectRevoked  = "revoked"      // its API key was revoked or rotated
	disconnectShutdown = "shutdown"     // the relay is stopping
)

// Metrics count the searcher sockets, the notifications written to them
// and why sockets closed. One set serves every hub of a process; a nil
// *Metrics counts nothing.
type Metrics struct {
	sockets         prometheus.Gauge
	deliveries      prometheus.Counter
	drops           *prometheus.CounterVec
	disconnects     *prometheus.CounterVec
	overflowed      prometheus.Counter // drops{reason="overflow"}
	droppedOnClosed prometheus.Counter // drops{reason="closed"}
}

// NewMetrics registers the stream's metrics on reg, or reuses those
// another hub registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	sockets, err := metrics.Gauge(reg, prometheus.GaugeOpts{Name: "orderflow_stream_sockets", Help: "Searcher WebSockets open."})
	if err != nil {
		return nil, err
	}
	deliveries, err := metrics.Counter(reg, prometheus.CounterOpts{Name: "orderflow_stream_deliveries_total",
		Help: "Notifications written to searcher sockets or queued behind their writer."})
	if err != nil {
		return nil, err
	}
	drops, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "orderflow_stream_drops_total",
		Help: "Notifications not delivered to a socket, by reason (overflow, closed)."},
		[]string{"reason"}, metrics.Values(dropOverflow, dropClosed)...)
	if err != nil {
		return nil, err
	}
	disconnects, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "orderflow_stream_disconnects_total",
		Help: "Searcher sockets closed, by reason."}, []string{"reason"},
		metrics.Values(disconnectOverflow, disconnectSlow, disconnectPing, disconnectProtocol, disconnectClosed,
			disconnectRevoked, disconnectShutdown)...)
	if err != nil {
		return nil, err
	}
	return &Metrics{sockets: sockets, deliveries: deliveries, drops: drops, disconnects: disconnects,
		overflowed: drops.WithLabelValues(dropOverflow), droppedOnClosed: drops.WithLabelValues(dropClosed)}, nil
}

func (m *Metrics) opened() {
	if m != nil {
		m.sockets.Inc()
	}
}

func (m *Metrics) left() {
	if m != nil {
		m.sockets.Dec()
	}
}

// sent counts one sweep's part: delivered notifications, and those that
// found a full queue or a closing socket.
func (m *Metrics) sent(delivered, overflowed, closed uint64) {
	if m == nil {
		return
	}
	m.deliveries.Add(float64(delivered))
	m.overflowed.Add(float64(overflowed))
	m.droppedOnClosed.Add(float64(closed))
}

func (m *Metrics) disconnected(reason string) {
	if m != nil {
		m.disconnects.WithLabelValues(reason).Inc()
	}
}
