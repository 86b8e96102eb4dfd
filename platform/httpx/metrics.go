package httpx

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the request metrics of one service's REST frame.
type Metrics struct {
	requests *prometheus.HistogramVec
	refusals *prometheus.CounterVec
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
	r := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "http_refusals_total",
		Help:        "REST answers 429 and 503 by reason.",
		ConstLabels: prometheus.Labels{"service": service},
	}, []string{"status", "reason"})
	// Every reason's series exists from the start, at 0, with the status
	// it is answered with (the middleware's Needs and Unavailable give 503,
	// TooMany 429), for the dashboard and the alerts.
	for _, reason := range []string{ReasonInFlight, ReasonDatabaseBusy, ReasonRateLimit} {
		r.WithLabelValues(strconv.Itoa(http.StatusTooManyRequests), reason)
	}
	for _, reason := range []string{ReasonPostgresDown, ReasonKafkaDown, ReasonOverloaded} {
		r.WithLabelValues(strconv.Itoa(http.StatusServiceUnavailable), reason)
	}
	for _, c := range []prometheus.Collector{h, r} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return &Metrics{requests: h, refusals: r}, nil
}

// Refused counts e if it is a 429 or a 503. The frame counts its own
// answers; a handler that answers outside it (the WebSocket upgrade)
// calls Refused itself. A reason outside the fixed list counts as
// ReasonOverloaded, so the label set stays bounded.
func (m *Metrics) Refused(e *Error) {
	if m == nil || (e.Status != http.StatusTooManyRequests && e.Status != http.StatusServiceUnavailable) {
		return
	}
	reason := e.Reason
	if !reasons[reason] {
		reason = ReasonOverloaded
	}
	m.refusals.WithLabelValues(strconv.Itoa(e.Status), reason).Inc()
}

func (m *Metrics) observe(method, route string, status int, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(elapsed.Seconds())
}
