package loadtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if got := Percentile(s, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %s", got)
	}
	if got := Percentile(s, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %s", got)
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("empty = %s", got)
	}
}

func TestRunCountsAnswersAndWrongStatuses(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(500)
			return
		}
		n.Add(1)
	}))
	defer srv.Close()
	c := Client(1)
	good := Run(context.Background(), "good", c, 1, 50*time.Millisecond, 200, func() (*http.Request, error) { return http.NewRequest("GET", srv.URL+"/", nil) })
	if good.Requests == 0 || good.Errors != 0 || int64(good.Requests) != n.Load() || good.P99 < good.P50 || good.Max < good.P99 {
		t.Fatalf("good run: %+v (server saw %d)", good, n.Load())
	}
	bad := Run(context.Background(), "bad", c, 1, 50*time.Millisecond, 200, func() (*http.Request, error) { return http.NewRequest("GET", srv.URL+"/bad", nil) })
	if bad.Requests != 0 || bad.Errors == 0 || bad.RPS() != 0 {
		t.Fatalf("bad run: %+v; answers of a wrong status must not count as requests", bad)
	}
}

func TestCompareTakesTheMedianOfPerRoundRatios(t *testing.T) {
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(2 * time.Millisecond) }))
	defer slow.Close()
	c := Compare(context.Background(), io.Discard, Client(2), 2, 40*time.Millisecond, 3,
		Target{Name: "fast", NewReq: GET(fast.URL, "")}, Target{Name: "slow", NewReq: GET(slow.URL, "token")})
	if c.Baseline.Name != "fast" || c.Subject.Name != "slow" || c.Baseline.Requests == 0 || c.Subject.Requests == 0 {
		t.Fatalf("comparison: %+v", c)
	}
	if c.MedianRatio <= 0 || c.MedianRatio >= 1 {
		t.Fatalf("a handler that sleeps 2ms per request must be slower than one that does not: ratio %.2f", c.MedianRatio)
	}
}

func TestGETSetsBearer(t *testing.T) {
	req, err := GET("http://127.0.0.1/x", "abc")()
	if err != nil || req.Header.Get("Authorization") != "Bearer abc" || req.Method != "GET" {
		t.Fatalf("%v %v", req, err)
	}
	req, _ = GET("http://127.0.0.1/x", "")()
	if req.Header.Get("Authorization") != "" {
		t.Fatal("bearer set without a token")
	}
}
