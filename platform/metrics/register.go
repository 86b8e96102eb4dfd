// Package metrics registers the collectors of a service on its process's
// registry. The one-process dev stack runs several services, and may run
// several instances of one, on a single registry: Register lets them
// share one collector per metric instead of failing on the second.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c on reg and returns the collector to count with:
// c, or the collector of the same name and labels reg already holds, so
// every instance counts into the same series. A nil reg registers
// nothing and returns c (tests, tools that serve no metrics).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, err
}

// CounterVec registers a counter vector with the given labels and
// returns it (or the one already registered). values, when given, are
// label values created at once, so that their series read 0 before the
// first event instead of being absent (a rate over a missing series is
// no rate at all).
func CounterVec(reg prometheus.Registerer, opts prometheus.CounterOpts, labels []string, values ...[]string) (*prometheus.CounterVec, error) {
	return withValues(reg, prometheus.NewCounterVec(opts, labels), values)
}

// GaugeVec is CounterVec for gauges.
func GaugeVec(reg prometheus.Registerer, opts prometheus.GaugeOpts, labels []string, values ...[]string) (*prometheus.GaugeVec, error) {
	return withValues(reg, prometheus.NewGaugeVec(opts, labels), values)
}

// vec is a metric vector whose series are made by label values.
type vec[M any] interface {
	prometheus.Collector
	WithLabelValues(values ...string) M
}

func withValues[V vec[M], M any](reg prometheus.Registerer, v V, values [][]string) (V, error) {
	v, err := Register(reg, v)
	if err != nil {
		return v, err
	}
	for _, lv := range values {
		v.WithLabelValues(lv...)
	}
	return v, nil
}

// Gauge registers a gauge without labels and returns it (or the one
// already registered).
func Gauge(reg prometheus.Registerer, opts prometheus.GaugeOpts) (prometheus.Gauge, error) {
	return Register(reg, prometheus.NewGauge(opts))
}

// Counter registers a counter without labels and returns it (or the one
// already registered).
func Counter(reg prometheus.Registerer, opts prometheus.CounterOpts) (prometheus.Counter, error) {
	return Register(reg, prometheus.NewCounter(opts))
}

// Values lists the values of a one-label vector for CounterVec and
// GaugeVec.
func Values(values ...string) [][]string {
	out := make([][]string, len(values))
	for i, v := range values {
		out[i] = []string{v}
	}
	return out
}
