package builders

import (
	"context"
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
	forwarded, failed := forwardOneFailOne(t, f, clock(f), up, flaky)
	if n := outboxRows(t, pool); n != 0 {
		t.Fatalf("%d outbox rows left after Kafka acknowledged the events", n)
	}
	checkPublished(t, cl, forwarded, failed)
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
	forwarded, failed := forwardOneFailOne(t, f, clock(f), up, flaky)
	if n := outboxRows(t, pool); n != 2 {
		t.Fatalf("%d events kept during the outage, want 2 (FORWARDED, FAILED)", n)
	}
	checkPublished(t, cl)

	relay := outbox.New(pool, cl, quiet)
	relay.RelayAge, relay.PublishTimeout = 0, time.Minute
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx, 10*time.Millisecond) }()
	eventually(t, "the outbox relay delivered the kept events", func() bool { return outboxRows(t, pool) == 0 })
	stop()
	<-done
	checkPublished(t, cl, forwarded, failed)
}

// forwardOneFailOne has f forward one bundle, to up at once and to flaky
// on its first retry, and then fail another that no builder takes within
// the window. It returns the event each must have: the forwarded one
// names up alone, as adding flaky publishes nothing.
func forwardOneFailOne(t *testing.T, f *Forwarder, advance func(time.Duration), up, flaky *fakeBuilder) (forwarded, failed topics.OrderflowBundleStatus) {
	t.Helper()
	raw := signed(t, 1, 0)
	taken := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{raw}})
	forwarded = topics.OrderflowBundleStatus{BundleHash: lower(mustDecode(t, taken).sb.BundleHash), Status: topics.BundleForwarded,
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
	handle(t, f, refused)
	for i := 0; len(f.retries) > 0; i++ {
		if i == 100 {
			t.Fatalf("still %d retries after 100 passes", len(f.retries))
		}
		advance(retryMax)
		handle(t, f)
	}
	failed = topics.OrderflowBundleStatus{BundleHash: lower(mustDecode(t, refused).sb.BundleHash), Status: topics.BundleFailed,
		Reason: "no builder accepted it within 24s", At: f.now().UnixMilli()}
	if st, _ := bundleRow(t, f.pool, failed.BundleHash); st != topics.BundleFailed {
		t.Fatalf("the refused bundle is %s", st)
	}
	return forwarded, failed
}

// checkPublished reads orderflow-lifecycle and checks that it holds the
// events want and no other, each once, with the id consumers drop
// repeats by.
func checkPublished(t *testing.T, cl *kgo.Client, want ...topics.OrderflowBundleStatus) {
	t.Helper()
	got := map[string][]topics.OrderflowBundleStatus{}
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderflowLifecycle) {
		env, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		var st topics.OrderflowBundleStatus
		if err := env.UnmarshalData(&st); err != nil {
			t.Fatal(err)
		}
		if env.Type != topics.TypeOrderflowBundleStatus || env.ID != "bs-"+st.BundleHash+"-"+st.Status || string(r.Key) != st.BundleHash {
			t.Errorf("event %s %s keyed %s for %+v", env.Type, env.ID, r.Key, st)
		}
		got[st.BundleHash] = append(got[st.BundleHash], st)
	}
	if len(got) != len(want) {
		t.Errorf("events of %d bundles, want %d: %+v", len(got), len(want), got)
	}
	for _, w := range want {
		if evs := got[w.BundleHash]; len(evs) != 1 || !reflect.DeepEqual(evs[0], w) {
			t.Errorf("events of %s: %+v, want one %+v", w.BundleHash, evs, w)
		}
	}
}

func outboxRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
