package builders

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metrics"
)

// What became of one send of a bundle or a cancellation to one builder
// (orderflow_builder_forwards_total's outcome): a fixed list.
const (
	forwardAccepted = "accepted" // the builder took it
	forwardRetried  = "retried"  // refused or unanswered; tried again at that builder later
	forwardRejected = "rejected" // the builder answered with an error, and its window of retries is over
	forwardFailed   = "failed"   // no valid answer, and its window of retries is over
)

// Metrics count the sends to builders. One set serves every forwarder of
// a process; a nil *Metrics counts nothing.
type Metrics struct {
	forwards *prometheus.CounterVec
}

// NewMetrics registers the forwarder's metrics on reg, or reuses those
// another forwarder registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	v, err := metrics.CounterVec(reg, prometheus.CounterOpts{Name: "orderflow_builder_forwards_total",
		Help: "Sends of bundles and cancellations to builders, by outcome (accepted, retried, rejected, failed)."},
		[]string{"outcome"}, metrics.Values(forwardAccepted, forwardRetried, forwardRejected, forwardFailed)...)
	if err != nil {
		return nil, err
	}
	return &Metrics{forwards: v}, nil
}

func (m *Metrics) forwarded(outcome string) {
	if m != nil {
		m.forwards.WithLabelValues(outcome).Inc()
	}
}

// rejection is a builder's JSON-RPC error answer: it was reached, and it
// refused.
type rejection struct{ msg string }

func (r *rejection) Error() string { return r.msg }

func isRejection(err error) bool {
	var r *rejection
	return errors.As(err, &r)
}
