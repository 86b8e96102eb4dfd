package inclusions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// published is one event the watcher published: its id and status.
type published struct{ id, status, reason string }

// TestReorgEventsAreNewEvents includes a backrun, orphans its block and
// includes the same transactions again at the same height of the new
// branch. Every change reaches the topics (the refund's events too, whose
// ids must fit the envelope), the orphaned inclusion is taken back with
// an event of reason "reorg", and the second inclusion has ids of its
// own, so a consumer that drops duplicates by id sees both.
func TestReorgEventsAreNewEvents(t *testing.T) {
	e := setup(t)
	cl, _ := kafkatest.Start(t)
	w := e.watcherTo(e.client(), 4, cl)
	origin, search, orphan := e.orphanedBackrun(t, w)
	e.mine(t, w, 3)
	st, block := e.status(t, "orderflow_txs", "hash", origin)
	if st != "INCLUDED" || block == nil || e.canonical(t, *block) == orphan {
		t.Fatalf("originator tx %s in %v after the reorganisation", st, block)
	}
	again := e.canonical(t, *block)

	lifecycle := readEvents(t, cl, topics.OrderflowLifecycle)
	bundle := "0xb" + hash(search)[3:]
	want := map[string][]string{
		origin: {"INCLUDED", "PENDING reorg", "INCLUDED"},
		bundle: {"INCLUDED", "FORWARDED reorg", "INCLUDED"},
	}
	for key, statuses := range want {
		evs := lifecycle[key]
		if got := describe(evs); strings.Join(got, ", ") != strings.Join(statuses, ", ") {
			t.Errorf("events of %s: %v, want %v", key, got, statuses)
			continue
		}
		for i, blockHash := range []string{orphan, orphan, again} {
			if !strings.HasSuffix(evs[i].id, "-"+blockHash[2:10]) {
				t.Errorf("event %d of %s has id %s, not of block %s", i, key, evs[i].id, blockHash)
			}
		}
	}
	refunds := readEvents(t, cl, topics.OrderflowRefunds)[origin]
	if got := describe(refunds); strings.Join(got, ", ") != "PENDING, ORPHANED, PENDING" {
		t.Fatalf("refund events %v, want PENDING, ORPHANED, PENDING", got)
	}
	seen := map[string]bool{}
	for _, evs := range [][]published{lifecycle[origin], lifecycle[bundle], refunds} {
		for _, ev := range evs {
			if seen[ev.id] {
				t.Errorf("event id %s published twice", ev.id)
			}
			seen[ev.id] = true
		}
	}
}

// readEvents returns the orderflow events of topic by record key, in log
// order.
func readEvents(t *testing.T, cl *kgo.Client, topic string) map[string][]published {
	t.Helper()
	out := map[string][]published{}
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, cl, topic) {
		env, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Status, Reason string }
		if err := env.UnmarshalData(&p); err != nil {
			t.Fatal(err)
		}
		out[string(r.Key)] = append(out[string(r.Key)], published{env.ID, p.Status, p.Reason})
	}
	return out
}

func describe(evs []published) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, strings.TrimSpace(ev.status+" "+ev.reason))
	}
	return out
}

// TestOpenTooLongIsFailed leaves a transaction and a bundle open for
// longer than PendingTTL: both are FAILED with the reason, with an event
// each; a transaction received since stays PENDING.
func TestOpenTooLongIsFailed(t *testing.T) {
	e := setup(t)
	cl, _ := kafkatest.Start(t)
	w := inclusions.New(inclusions.Config{ChainID: chainID, PendingTTL: time.Hour}, e.client(), e.pool, outbox.New(e.pool, cl, quiet), quiet)
	old, fresh, bundle := "0x"+strings.Repeat("a1", 32), "0x"+strings.Repeat("a2", 32), "0x"+strings.Repeat("b1", 32)
	for _, tx := range []struct {
		hash string
		age  string
	}{{old, "2 hours"}, {fresh, "1 minute"}} {
		if _, err := e.pool.Exec(t.Context(), `INSERT INTO orderflow_txs (hash, originator, sender, raw, decoded, method, refund_recipient, refund_percent, received_at)
			VALUES ($1, '', '0x', '0x', '{}', 'eth_sendRawTransaction', '', 0, now() - $2::interval)`, tx.hash, tx.age); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(t.Context(), `INSERT INTO orderflow_bundles (bundle_hash, kind, tx_hashes, status, builders, received_at)
		VALUES ($1, 'originator', $2, 'FORWARDED', '{http://builder}', now() - interval '2 hours')`, bundle, []string{old}); err != nil {
		t.Fatal(err)
	}
	e.mine(t, w, 1)
	for _, c := range []struct{ table, key, hash, status string }{
		{"orderflow_txs", "hash", old, "FAILED"},
		{"orderflow_txs", "hash", fresh, "PENDING"},
		{"orderflow_bundles", "bundle_hash", bundle, "FAILED"},
	} {
		if st, _ := e.status(t, c.table, c.key, c.hash); st != c.status {
			t.Errorf("%s %s is %s, want %s", c.table, c.hash, st, c.status)
		}
	}
	lifecycle := readEvents(t, cl, topics.OrderflowLifecycle)
	for key, want := range map[string]string{old: "FAILED not included in time", bundle: "FAILED not included in time", fresh: ""} {
		if got := strings.Join(describe(lifecycle[key]), ", "); got != want {
			t.Errorf("events of %s: %q, want %q", key, got, want)
		}
	}
}

// TestEventsKeptThroughAKafkaOutage includes a backrun while no broker
// answers the watcher: its events stay in the outbox, and the outbox
// relay, once a broker answers, publishes them, each once, with the ids
// they were decided with.
func TestEventsKeptThroughAKafkaOutage(t *testing.T) {
	e := setup(t)
	cl, _ := kafkatest.Start(t)
	down, err := kafka.NewClient(kafka.Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	out := outbox.New(e.pool, down, quiet)
	out.PublishTimeout = 100 * time.Millisecond
	w := inclusions.New(inclusions.Config{ChainID: chainID, PayerKey: e.payer, RefundConfirmations: 4, Resend: time.Millisecond},
		e.client(), e.pool, out, quiet)
	step(t, w)
	origin, search := e.backrun(t)
	e.mine(t, w, 1)
	kept := func() int {
		var n int
		if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := kept(); n != 3 {
		t.Fatalf("%d events kept during the outage, want 3 (transaction, bundle, refund)", n)
	}
	if got := readEvents(t, cl, topics.OrderflowLifecycle); len(got) != 0 {
		t.Fatalf("events published during the outage: %v", got)
	}

	relay := outbox.New(e.pool, cl, quiet)
	relay.RelayAge = 0
	if n, err := relay.RelayOnce(t.Context(), 100); err != nil || n != 3 {
		t.Fatalf("the relay delivered %d kept events (%v), want 3", n, err)
	}
	if n := kept(); n != 0 {
		t.Fatalf("%d events still kept after the relay delivered them", n)
	}
	lifecycle, refunds := readEvents(t, cl, topics.OrderflowLifecycle), readEvents(t, cl, topics.OrderflowRefunds)
	for key, want := range map[string]string{origin: "INCLUDED", "0xb" + hash(search)[3:]: "INCLUDED"} {
		if got := strings.Join(describe(lifecycle[key]), ", "); got != want {
			t.Errorf("events of %s: %q, want %q", key, got, want)
		}
	}
	if got := strings.Join(describe(refunds[origin]), ", "); got != "PENDING" {
		t.Errorf("refund events %q, want PENDING", got)
	}
}
