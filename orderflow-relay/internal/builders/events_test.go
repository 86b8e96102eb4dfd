package builders

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// TestStatusEventsReachTheTopic: a bundle forwarded and a bundle no
// builder took publish one event each on orderflow-lifecycle, with what
// the bundle reached; a builder added later publishes nothing, and no
// outbox row is left once Kafka has the events.
func TestStatusEventsReachTheTopic(t *testing.T) {
	cl, _ := kafkatest.Start(t)
	pool := pgtest.New(t, schema.Migrations())
	out := outbox.New(pool, cl, quiet)
	out.PublishTimeout = time.Minute // no relay runs: the publish after commit must get through
	up, flaky := newFakeBuilder(t), newFakeBuilder(t)
	f := forwarderTo(pool, Config{}, out, up, flaky)
	want := forwardOneFailOne(t, f, clock(f), up, flaky)
	if n := outboxRows(t, pool); n != 0 {
		t.Fatalf("%d outbox rows left after Kafka acknowledged the events", n)
	}
	checkPublished(t, cl, want)
}

// TestStatusEventsKeptThroughAKafkaOutage decides a FORWARDED and a
// FAILED while no broker answers the forwarder: the bundles change and
// their events stay in the outbox; once a broker answers, the outbox
// relay delivers each event once.
func TestStatusEventsKeptThroughAKafkaOutage(t *testing.T) {
	cl, _ := kafkatest.Start(t)
	down, err := kafka.NewClient(kafka.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	pool := pgtest.New(t, schema.Migrations())
	out := outbox.New(pool, down, quiet)
	out.PublishTimeout = 100 * time.Millisecond // nothing will answer
	up, flaky := newFakeBuilder(t), newFakeBuilder(t)
	f := forwarderTo(pool, Config{}, out, up, flaky)
	want := forwardOneFailOne(t, f, clock(f), up, flaky)
	if n := outboxRows(t, pool); n != 2 {
		t.Fatalf("%d events kept during the outage, want 2 (FORWARDED, FAILED)", n)
	}
	checkPublished(t, cl, nil)

	relay := outbox.New(pool, cl, quiet)
	relay.RelayAge, relay.PublishTimeout = 0, time.Minute
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx, 10*time.Millisecond) }()
	poll.Until(t, "the outbox relay delivered the kept events", func() bool { return outboxRows(t, pool) == 0 })
	stop()
	<-done
	checkPublished(t, cl, want)
}

// forwardOneFailOne has f forward one bundle, to up at once and to flaky
// on its first retry, and then fail another that no builder takes within
// the window. It returns the event each must have by id: the forwarded
// one names up alone, as adding flaky publishes nothing.
func forwardOneFailOne(t *testing.T, f *Forwarder, advance func(time.Duration), up, flaky *fakeBuilder) map[string]topics.OrderflowBundleStatus {
	t.Helper()
	raw := signed(t, 1, 0)
	taken := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{raw}})
	taken.Partition, taken.Offset = 2, 40
	forwarded := topics.OrderflowBundleStatus{BundleHash: lower(mustDecode(t, taken).sb.BundleHash), Status: topics.BundleForwarded,
		BuilderBundleHash: BuilderHash([]string{raw}), Builders: []string{up.srv.URL}, At: f.now().UnixMilli()}
	flaky.setDown(1)
	handle(t, f, taken)
	advance(retryFirst)
	handle(t, f)
	if builders := forwardedTo(t, f.pool, forwarded.BundleHash); !slices.Equal(builders, []string{up.srv.URL, flaky.srv.URL}) {
		t.Fatalf("forwarded to %v, want both builders", builders)
	}

	up.setDown(1 << 20)
	flaky.setDown(1 << 20)
	refused := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 2, 0)}})
	refused.Partition, refused.Offset = 5, 41
	handle(t, f, refused)
	for i := 0; len(f.retries) > 0; i++ {
		if i == 100 {
			t.Fatalf("still %d retries after 100 passes", len(f.retries))
		}
		advance(retryMax)
		handle(t, f)
	}
	failed := topics.OrderflowBundleStatus{BundleHash: lower(mustDecode(t, refused).sb.BundleHash), Status: topics.BundleFailed,
		Reason: "no builder accepted it within 24s", At: f.now().UnixMilli()}
	if st, _ := bundleRow(t, f.pool, failed.BundleHash); st != topics.BundleFailed {
		t.Fatalf("the refused bundle is %s", st)
	}
	return map[string]topics.OrderflowBundleStatus{
		"bs-" + forwarded.BundleHash + "-FORWARDED-2:40": forwarded,
		"bs-" + failed.BundleHash + "-FAILED-5:41":       failed,
	}
}

// checkPublished reads orderflow-lifecycle and checks that it holds
// exactly the events of want by envelope id (the id consumers drop
// repeats by), each once, keyed by its bundle.
func checkPublished(t *testing.T, cl *kgo.Client, want map[string]topics.OrderflowBundleStatus) {
	t.Helper()
	got := map[string]topics.OrderflowBundleStatus{}
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderflowLifecycle) {
		env, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		var st topics.OrderflowBundleStatus
		if err := env.UnmarshalData(&st); err != nil {
			t.Fatal(err)
		}
		if env.Type != topics.TypeOrderflowBundleStatus || string(r.Key) != st.BundleHash {
			t.Errorf("event %s %s keyed %s for %+v", env.Type, env.ID, r.Key, st)
		}
		if _, dup := got[env.ID]; dup {
			t.Errorf("event %s published twice", env.ID)
		}
		got[env.ID] = st
	}
	if len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Errorf("events\n%+v\nwant\n%+v", got, want)
	}
}

// TestReplacedCancelledAndExpiredBundlesPublishEvents: the status changes
// a poll decides as it stores the log publish their events too: a version
// replaced by a newer one of its group, a group's live version cancelled,
// and a backrun whose transaction never came. Their ids name the record
// that caused them, so a group's second cancellation is a new event.
func TestReplacedCancelledAndExpiredBundlesPublishEvents(t *testing.T) {
	cl, _ := kafkatest.Start(t)
	pool := pgtest.New(t, schema.Migrations())
	out := outbox.New(pool, cl, quiet)
	out.PublishTimeout = time.Minute
	up := newFakeBuilder(t)
	f := forwarderTo(pool, Config{BackrunWait: time.Second}, out, up)
	advance := clock(f)
	offset := int64(100)
	at := func(r *kgo.Record) *kgo.Record { offset++; r.Partition, r.Offset = 3, offset; return r }
	version := func(n int) (*kgo.Record, string) {
		r := at(searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, n, 0)}, "replacementUuid": group}))
		return r, lower(mustDecode(t, r).sb.BundleHash)
	}
	cancel := func() *kgo.Record {
		return at(searcherRecord(t, of.MethodCancelBundle, map[string]any{"replacementUuid": group}))
	}
	want := map[string]topics.OrderflowBundleStatus{}
	forwarded := func(r *kgo.Record, hash string, n int) {
		want[fmt.Sprintf("bs-%s-FORWARDED-3:%d", hash, r.Offset)] = topics.OrderflowBundleStatus{BundleHash: hash, Status: topics.BundleForwarded,
			BuilderBundleHash: BuilderHash([]string{signed(t, n, 0)}), Builders: []string{up.srv.URL}, At: f.now().UnixMilli()}
	}

	v1, h1 := version(1)
	handle(t, f, v1)
	forwarded(v1, h1, 1)
	v2, h2 := version(2)
	handle(t, f, v2)
	forwarded(v2, h2, 2)
	want[fmt.Sprintf("bs-%s-REPLACED-3:%d", h1, v2.Offset)] = topics.OrderflowBundleStatus{BundleHash: h1, Status: topics.BundleReplaced,
		Reason: "replaced by " + h2, At: f.now().UnixMilli()}
	c1 := cancel()
	handle(t, f, c1)
	want[fmt.Sprintf("bs-%s-CANCELLED-3:%d", h2, c1.Offset)] = topics.OrderflowBundleStatus{BundleHash: h2, Status: topics.BundleCancelled,
		At: f.now().UnixMilli()}
	// Sent again after its cancellation, the version is live again and a
	// second cancellation is a second event.
	again := at(searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 2, 0)}, "replacementUuid": group}))
	handle(t, f, again)
	if st, _ := bundleRow(t, pool, h2); st != topics.BundleForwarded {
		t.Fatalf("the version sent again is %s", st)
	}
	forwarded(again, h2, 2)
	c2 := cancel()
	handle(t, f, c2)
	want[fmt.Sprintf("bs-%s-CANCELLED-3:%d", h2, c2.Offset)] = topics.OrderflowBundleStatus{BundleHash: h2, Status: topics.BundleCancelled,
		At: f.now().UnixMilli()}

	origin := signed(t, 7, 0)
	br := at(backrunOf(t, origin, signed(t, 8, 0)))
	hb := lower(mustDecode(t, br).sb.BundleHash)
	handle(t, f, br)
	advance(2 * time.Second)
	handle(t, f)
	if st, _ := bundleRow(t, pool, hb); st != topics.BundleFailed {
		t.Fatalf("the backrun whose transaction never came is %s", st)
	}
	want[fmt.Sprintf("bs-%s-FAILED-3:%d", hb, br.Offset)] = topics.OrderflowBundleStatus{BundleHash: hb, Status: topics.BundleFailed,
		Reason: "backrun of " + txHash(t, origin) + ", a transaction this relay never received", At: f.now().UnixMilli()}

	if n := outboxRows(t, pool); n != 0 {
		t.Fatalf("%d outbox rows left after Kafka acknowledged the events", n)
	}
	checkPublished(t, cl, want)
}

func outboxRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
