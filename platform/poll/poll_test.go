package poll

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, so that the test can look at what a wait reported. Fatalf ends the
// goroutine as testing.T's does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run runs wait in a goroutine of its own, as testing runs a test, and
// returns the failure it reported, empty if none.
func run(wait func(t testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func TestWaits(t *testing.T) {
	cases := []struct {
		name     string
		wait     func(t testing.TB, cond func() bool)
		holdsAt  int // the look at which cond first holds; 0: never
		wantFail string
	}{
		{"until holds at once", func(t testing.TB, c func() bool) { Until(t, "x", c) }, 1, ""},
		{"until holds later", func(t testing.TB, c func() bool) { Until(t, "x", c) }, 5, ""},
		{"within holds later", func(t testing.TB, c func() bool) { Within(t, "x", time.Minute, c) }, 5, ""},
		{"within never holds", func(t testing.TB, c func() bool) { Within(t, "the fill", 0, c) }, 0,
			"timed out waiting for the fill"},
		{"before a past deadline", func(t testing.TB, c func() bool) { Before(t, "the row", time.Now(), c, nil) }, 0,
			"timed out waiting for the row"},
		{"before with what was seen", func(t testing.TB, c func() bool) {
			Before(t, "the row", time.Now(), c, func() string { return "status 1" })
		}, 0, "timed out waiting for the row; last seen: status 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			looks := 0
			failed := run(func(tb testing.TB) {
				c.wait(tb, func() bool { looks++; return looks == c.holdsAt })
			})
			if failed != c.wantFail {
				t.Errorf("failure %q, want %q", failed, c.wantFail)
			}
			if c.holdsAt > 0 && looks != c.holdsAt {
				t.Errorf("cond asked %d times, want %d: a wait stops at the first look that holds", looks, c.holdsAt)
			}
			if c.holdsAt == 0 && !strings.HasPrefix(failed, "timed out") {
				t.Errorf("a condition that never holds must fail the test")
			}
		})
	}
}
