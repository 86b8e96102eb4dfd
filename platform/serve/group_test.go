package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupDrainsInFlightRequests cancels the group while a request is
// being served: the request still gets its answer, draining is signalled
// first, the loops stop, and Run returns nil.
func TestGroupDrainsInFlightRequests(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var drained, loopSawDrain atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	g := Group{
		Servers:  []Listening{{Listener: ln, Handler: h}},
		Loops:    []func(context.Context) error{func(ctx context.Context) error { <-ctx.Done(); loopSawDrain.Store(drained.Load()); return nil }},
		Grace:    10 * time.Second,
		Draining: func() { drained.Store(true) },
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-entered
	cancel()
	close(release)
	if got := <-answer; got != "done" {
		t.Fatalf("in-flight request answered %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !loopSawDrain.Load() {
		t.Error("loops stopped before readiness was drained")
	}
	if _, err := http.Get("http://" + ln.Addr().String()); err == nil {
		t.Error("listener still accepts after Run returned")
	}
}

// failingConsumer is a loop that fails at once.
type failingConsumer struct{ err error }

func (f failingConsumer) Run(context.Context) error { return f.err }

func TestGroupStopsWhenALoopFails(t *testing.T) {
	boom := errors.New("consumer failed")
	var stopped atomic.Bool
	g := Group{Loops: []func(context.Context) error{
		failingConsumer{boom}.Run,
		func(ctx context.Context) error { <-ctx.Done(); stopped.Store(true); return nil },
	}}
	err := g.Run(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "loop serve.failingConsumer.Run: consumer failed") {
		t.Fatalf("Run = %v, want the loop's error naming the loop", err)
	}
	if !stopped.Load() {
		t.Error("the other loop was not stopped")
	}
}

func TestEveryReportsFailuresAndStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls, reported := 0, make(chan error, 10)
	done := make(chan struct{})
	go func() {
		Every(ctx, time.Millisecond, func(context.Context) error {
			calls++
			if calls == 3 {
				cancel()
			}
			return errors.New("probe failed")
		}, func(err error) { reported <- err })
		close(done)
	}()
	<-done
	close(reported)
	n := 0
	for range reported {
		n++
	}
	if calls != 3 || n != 2 {
		t.Fatalf("calls %d, reported %d; want 3 calls and 2 reports (none after cancel)", calls, n)
	}
}
