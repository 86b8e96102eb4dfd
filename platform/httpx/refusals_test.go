package httpx

import (
	"errors"
	"io"
	"maps"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metricstest"
)

// TestRefusalsCountUnderTheirReason forces a 429 of the concurrency limit,
// a 503 of each dependency Needs watches, and one of an adapter whose
// dependency is unavailable, and reads http_refusals_total.
func TestRefusalsCountUnderTheirReason(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	e := newTestEngine(t, io.Discard, func(c *Config) { c.MaxInFlight = 1; c.Metrics = m })
	e.GET("/slow", func(c *gin.Context) {
		entered <- struct{}{}
		<-release
		OK(c, struct{}{})
	})
	down := func() error { return errors.New("connection refused") }
	e.GET("/needs-postgres", Needs("postgres", down), func(c *gin.Context) { OK(c, struct{}{}) })
	e.GET("/needs-kafka", Needs("kafka", down), func(c *gin.Context) { OK(c, struct{}{}) })

	done := make(chan int)
	go func() { done <- do(e, "GET", "/slow", "", "").status }()
	<-entered
	if a := do(e, "GET", "/api/v1/p/tokens", "", ""); a.status != 429 {
		t.Fatalf("request over the limit: %d %s", a.status, a.raw)
	}
	close(release)
	if s := <-done; s != 200 {
		t.Fatalf("request within the limit: %d", s)
	}
	for _, path := range []string{"/needs-postgres", "/needs-kafka", "/needs-kafka", "/unavailable", "/boom"} {
		do(e, "GET", path, "", "")
	}

	got := metricstest.NonZero(metricstest.Prefixed(metricstest.Gather(t, reg), "http_refusals_total"))
	want := map[string]float64{
		`http_refusals_total{reason="in_flight",service="test",status="429"}`:     1,
		`http_refusals_total{reason="postgres_down",service="test",status="503"}`: 1,
		`http_refusals_total{reason="kafka_down",service="test",status="503"}`:    2,
		`http_refusals_total{reason="overloaded",service="test",status="503"}`:    1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("refusals:\n%s\nwant:\n%s", metricstest.Dump(got), metricstest.Dump(want))
	}
}

// TestRefusedKeepsTheReasonsFixed counts a reason outside the list as
// overloaded and ignores answers that are not refusals.
func TestRefusedKeepsTheReasonsFixed(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	m.Refused(&Error{Status: 429, Reason: "user 42 was too fast"})
	m.Refused(TooMany(ReasonRateLimit, "slow down"))
	m.Refused(Invalid("chainId must be an integer"))
	got := metricstest.NonZero(metricstest.Prefixed(metricstest.Gather(t, reg), "http_refusals_total"))
	want := map[string]float64{
		`http_refusals_total{reason="overloaded",service="test",status="429"}`: 1,
		`http_refusals_total{reason="rate_limit",service="test",status="429"}`: 1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("refusals:\n%s", metricstest.Dump(got))
	}
}

// TestRefusalSeriesExistFromTheStart: each reason's series is there at 0
// before any refusal, so that the dashboard and the alerts see it.
func TestRefusalSeriesExistFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, "test"); err != nil {
		t.Fatal(err)
	}
	got := metricstest.Prefixed(metricstest.Gather(t, reg), "http_refusals_total")
	want := map[string]float64{}
	for _, r := range []string{"in_flight", "database_busy", "rate_limit"} {
		want[`http_refusals_total{reason="`+r+`",service="test",status="429"}`] = 0
	}
	for _, r := range []string{"postgres_down", "kafka_down", "overloaded"} {
		want[`http_refusals_total{reason="`+r+`",service="test",status="503"}`] = 0
	}
	if !maps.Equal(got, want) {
		t.Fatalf("refusal series before any refusal:\n%s", metricstest.Dump(got))
	}
}
