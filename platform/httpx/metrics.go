package httpx

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the request metrics of one service's REST frame.
type Metrics struct {
	requests *prometheus.HistogramVec
}

// NewMetrics registers the frame's metrics for service on reg. Several
// services may share one registry (the one-process dev stack): the
// service label keeps their series apart.
func NewMetrics(reg prometheus.Registerer, service string) (*Metrics, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "http_request_duration_seconds",
		Help:        "REST request latency by method, route and status.",
		ConstLabels: prometheus.Labels{"service": service},
		Buckets:     []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"method", "route", "status"})
	if err := reg.Register(h); err != nil {
		return nil, err
	}
	return &Metrics{requests: h}, nil
}

func (m *Metrics) observe(method, route string, status int, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(elapsed.Seconds())
}
