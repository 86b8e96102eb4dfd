package loadtest

import (
	"context"
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
	if bad.Requests == 0 || bad.Errors != bad.Requests {
		t.Fatalf("bad run: %+v", bad)
	}
}
