package builders

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// clocked returns a forwarder to bs on a fresh database whose clock the
// test moves, and a function that moves it.
func clocked(t *testing.T, bs ...*fakeBuilder) (*Forwarder, *pgxpool.Pool, func(time.Duration)) {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	f := forwarderOn(pool, Config{}, bs...)
	return f, pool, clock(f)
}

// clock gives f a clock the test moves, and returns the function that
// moves it.
func clock(f *Forwarder) func(time.Duration) {
	now := time.Now()
	f.now = func() time.Time { return now }
	return func(d time.Duration) { now = now.Add(d) }
}

func handle(t *testing.T, f *Forwarder, recs ...*kgo.Record) {
	t.Helper()
	if err := f.Handle(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
}

// TestBuilderBackAfterFailures: a builder that refuses the first two
// sends gets the bundle on the retry after it is back, not before each
// retry is due; another builder gets it once, at once, and the bundle is
// FORWARDED to one, then to both.
func TestBuilderBackAfterFailures(t *testing.T) {
	down, up := newFakeBuilder(t), newFakeBuilder(t)
	f, pool, advance := clocked(t, down, up)
	tx := signed(t, 1, 0)
	r := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{tx}})
	hash := mustDecode(t, r).sb.BundleHash
	down.setDown(2)

	handle(t, f, r)
	if up.sent(tx) != 1 || down.sent(tx) != 0 {
		t.Fatalf("first pass: up has it %d times, down %d", up.sent(tx), down.sent(tx))
	}
	if builders := forwardedTo(t, pool, hash); !slices.Equal(builders, []string{up.srv.URL}) {
		t.Fatalf("after the first pass builders are %v", builders)
	}
	handle(t, f) // nothing is due yet
	advance(retryFirst - time.Millisecond)
	handle(t, f)
	if down.hits() != 1 || len(f.retries) != 1 {
		t.Fatalf("tried again before it was due: %d requests, %d retries", down.hits(), len(f.retries))
	}
	advance(time.Millisecond)
	handle(t, f) // the second refusal
	advance(2*retryFirst - time.Millisecond)
	handle(t, f)
	if down.hits() != 2 {
		t.Fatalf("%d requests before the second retry was due, want 2", down.hits())
	}
	advance(time.Millisecond)
	handle(t, f)
	if down.sent(tx) != 1 || up.sent(tx) != 1 || len(f.retries) != 0 {
		t.Fatalf("after it came back: down has it %d times, up %d, %d retries left", down.sent(tx), up.sent(tx), len(f.retries))
	}
	if builders := forwardedTo(t, pool, hash); !slices.Equal(builders, []string{up.srv.URL, down.srv.URL}) {
		t.Fatalf("builders %v, want both", builders)
	}
	advance(time.Minute)
	handle(t, f)
	if down.sent(tx) != 1 || up.sent(tx) != 1 {
		t.Fatalf("sent again: down %d, up %d", down.sent(tx), up.sent(tx))
	}
}

// TestNoBuilderWithinTheWindow: a bundle that no builder takes within
// RetryFor becomes FAILED, and is not tried again.
func TestNoBuilderWithinTheWindow(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool, advance := clocked(t, b)
	b.setDown(1 << 20)
	r := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 1, 0)}})
	hash := mustDecode(t, r).sb.BundleHash
	handle(t, f, r)
	for range 100 {
		if len(f.retries) == 0 {
			break
		}
		if st, _ := bundleRow(t, pool, hash); st != topics.BundleReceived {
			t.Fatalf("%s while retries are left", st)
		}
		advance(retryMax)
		handle(t, f)
	}
	st, reason := bundleRow(t, pool, hash)
	if st != topics.BundleFailed || !strings.Contains(reason, "no builder accepted it") || strings.Contains(reason, b.srv.URL) {
		t.Fatalf("bundle is %s %q", st, reason)
	}
	sends := b.hits()
	if sends < 2 {
		t.Fatalf("%d sends: it was never tried again", sends)
	}
	advance(time.Hour)
	handle(t, f)
	if b.hits() != sends {
		t.Fatalf("tried again after it failed: %d sends, then %d", sends, b.hits())
	}
}

// TestRetryGivesWayToNewerVersion: a version a builder refused is not
// sent after the newer version of its group, nor after a cancellation.
func TestRetryGivesWayToNewerVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"newer version", false}, {"cancellation", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBuilder(t)
			f, _, advance := clocked(t, b)
			older := signed(t, 1, 0)
			b.setDown(1)
			handle(t, f, searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{older}, "replacementUuid": group}))
			method, param := of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 2, 0)}, "replacementUuid": group}
			if tc.cancel {
				method, param = of.MethodCancelBundle, map[string]any{"replacementUuid": group}
			}
			handle(t, f, searcherRecord(t, method, param))
			for range 20 {
				advance(retryMax)
				handle(t, f)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if slices.Contains(b.events, older) {
				t.Fatalf("builder took the older version: %v", b.events)
			}
		})
	}
}

// TestCancelRetried: a cancellation a builder refused is sent again.
func TestCancelRetried(t *testing.T) {
	b := newFakeBuilder(t)
	f, _, advance := clocked(t, b)
	handle(t, f, searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 1, 0)}, "replacementUuid": group}))
	b.setDown(1)
	handle(t, f, searcherRecord(t, of.MethodCancelBundle, map[string]any{"replacementUuid": group}))
	if _, held := b.group(group); !held {
		t.Fatal("the builder lost the group before the cancellation reached it")
	}
	advance(retryFirst)
	handle(t, f)
	if txs, held := b.group(group); held {
		t.Fatalf("builder still holds %v", txs)
	}
}

func forwardedTo(t *testing.T, pool *pgxpool.Pool, hash string) []string {
	t.Helper()
	var builders []string
	if err := pool.QueryRow(t.Context(), `SELECT builders FROM orderflow_bundles WHERE bundle_hash = $1`, strings.ToLower(hash)).Scan(&builders); err != nil {
		t.Fatal(err)
	}
	return builders
}
