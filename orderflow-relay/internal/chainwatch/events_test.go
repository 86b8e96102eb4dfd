package chainwatch_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
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
