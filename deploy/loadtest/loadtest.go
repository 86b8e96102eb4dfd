// Package loadtest drives closed-loop HTTP load (a fixed number of workers,
// each sending its next request when the previous one is answered) and
// reports throughput and latency percentiles. Figures are only compared
// with a baseline measured in the same run, never asserted in tests.
package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Result is what one load run measured.
type Result struct {
	Name     string
	Requests int // answered with the expected status
	Errors   int // transport errors and unexpected statuses
	Elapsed  time.Duration
	P50, P99 time.Duration
	Max      time.Duration
}

// RPS is requests answered with the expected status per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("%-28s %9.0f req/s  p50 %8s  p99 %8s  max %8s  errors %d",
		r.Name, r.RPS(), r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond), r.Errors)
}

// Client returns an HTTP client that keeps one connection per worker.
func Client(workers int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: workers, MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
		IdleConnTimeout: time.Minute, DisableCompression: true,
	}, Timeout: 10 * time.Second}
}

// Run sends requests made by newReq from workers goroutines for d and
// measures every answer. want is the expected status.
func Run(ctx context.Context, name string, client *http.Client, workers int, d time.Duration, want int, newReq func() (*http.Request, error)) Result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lat := make([][]time.Duration, workers)
	errs := make([]int, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lat[w], errs[w] = worker(ctx, client, want, newReq)
		}(w)
	}
	wg.Wait()
	return summarize(name, time.Since(start), lat, errs)
}

func worker(ctx context.Context, client *http.Client, want int, newReq func() (*http.Request, error)) ([]time.Duration, int) {
	var lat []time.Duration
	errs := 0
	for ctx.Err() == nil {
		req, err := newReq()
		if err != nil {
			errs++
			continue
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				errs++
			}
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// Only answers of the expected status count: fast refusals
		// (401, 429, 503) must not pass for throughput.
		if resp.StatusCode != want {
			errs++
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, errs
}

func summarize(name string, elapsed time.Duration, lat [][]time.Duration, errs []int) Result {
	var all []time.Duration
	r := Result{Name: name, Elapsed: elapsed}
	for i := range lat {
		all = append(all, lat[i]...)
		r.Errors += errs[i]
	}
	r.Requests = len(all)
	if len(all) == 0 {
		return r
	}
	slices.Sort(all)
	r.P50 = Percentile(all, 0.50)
	r.P99 = Percentile(all, 0.99)
	r.Max = all[len(all)-1]
	return r
}

// Percentile returns the q-quantile (0..1) of sorted latencies.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}
