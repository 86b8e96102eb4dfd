package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// Target is one side of a comparison: a name and how to make its request.
type Target struct {
	Name   string
	NewReq func() (*http.Request, error)
}

// Comparison is a subject measured next to a baseline in alternating
// rounds: the best run of each, and the median of the per-round ratios
// (subject/baseline of the same round), which is what holds on a noisy
// machine because both sides of a round see the same noise.
type Comparison struct {
	Baseline, Subject Result
	MedianRatio       float64
}

// Compare runs baseline then subject, rounds times, printing every run.
func Compare(ctx context.Context, w io.Writer, client *http.Client, workers int, d time.Duration, rounds int, baseline, subject Target) Comparison {
	var c Comparison
	ratios := make([]float64, 0, rounds)
	for i := 0; i < rounds; i++ {
		b := Run(ctx, baseline.Name, client, workers, d, http.StatusOK, baseline.NewReq)
		s := Run(ctx, subject.Name, client, workers, d, http.StatusOK, subject.NewReq)
		fmt.Fprintln(w, " ", b)
		fmt.Fprintln(w, " ", s)
		if i == 0 || b.RPS() > c.Baseline.RPS() {
			c.Baseline = b
		}
		if i == 0 || s.RPS() > c.Subject.RPS() {
			c.Subject = s
		}
		if b.RPS() > 0 {
			ratios = append(ratios, s.RPS()/b.RPS())
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		c.MedianRatio = ratios[len(ratios)/2]
	}
	fmt.Fprintln(w, "best runs:")
	fmt.Fprintln(w, " ", c.Baseline)
	fmt.Fprintln(w, " ", c.Subject)
	return c
}

// GET returns a request maker for url, with a bearer token when given.
func GET(url, bearer string) func() (*http.Request, error) {
	return func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err == nil && bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return req, err
	}
}
