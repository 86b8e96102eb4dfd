// Package poll is for tests that wait for something another goroutine or
// process brings about: a record consumed, a row written, a server up.
// Every wait has the same shape, poll.Until(t, what, cond): cond is asked
// until it holds, and a wait that never ends fails the test with what it
// waited for. The bound only ends a broken run; a passing test never comes
// near it, and no test asserts how long a wait took.
package poll

import (
	"testing"
	"time"
)

// Timeout bounds a wait of Until. It is long because it only ends a broken
// run, and a test may wait for a broker's start or a crash's recovery on a
// loaded machine.
const Timeout = 2 * time.Minute

// The interval between two looks starts at firstInterval, so that a
// condition that holds soon is seen soon, and doubles up to maxInterval,
// so that a long wait does not keep a loaded machine busy.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 50 * time.Millisecond
)

// Until asks cond until it holds, for at most Timeout.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Before(t, what, time.Now().Add(Timeout), cond, nil)
}

// Within asks cond until it holds, for at most timeout: for a wait whose
// work may take longer than Timeout (a whole stack's first build).
func Within(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	Before(t, what, time.Now().Add(timeout), cond, nil)
}

// Before asks cond until it holds or deadline has passed; then the test
// fails, naming what and, unless last is nil, what last says the final
// look saw.
func Before(t testing.TB, what string, deadline time.Time, cond func() bool, last func() string) {
	t.Helper()
	for interval := firstInterval; !cond(); interval = min(2*interval, maxInterval) {
		if time.Now().After(deadline) {
			if last != nil {
				t.Fatalf("timed out waiting for %s; last seen: %s", what, last())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(interval)
	}
}
