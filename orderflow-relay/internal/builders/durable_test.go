package builders

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// slowWait keeps backruns waiting longer than any of these tests runs.
var slowWait = Config{BackrunWait: 5 * time.Minute}

// backrunOf returns the record of a searcher bundle backrunning origin
// with the searcher's transaction tx.
func backrunOf(t *testing.T, origin, tx string) *kgo.Record {
	return searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{txHash(t, origin), tx}})
}

func statusIs(t *testing.T, pool *pgxpool.Pool, r *kgo.Record, status string) func() bool {
	hash := mustDecode(t, r).sb.BundleHash
	return func() bool { st, _ := bundleRow(t, pool, hash); return st == status }
}

// rig starts a broker (returning a producer on it), a database and a
// builder for forwarders of the group.
func rig(t *testing.T) (*kgo.Client, []string, *pgxpool.Pool, *fakeBuilder) {
	t.Helper()
	producer, brokers := kafkatest.Start(t)
	return producer, brokers, pgtest.New(t, schema.Migrations()), newFakeBuilder(t)
}

// waitConsumed waits until the forwarders' group committed the end of
// both topics.
func waitConsumed(t *testing.T, cl *kgo.Client) {
	t.Helper()
	for _, topic := range []string{topics.OrderflowTxs, topics.OrderflowBundles} {
		kafkatest.WaitConsumed(t.Context(), t, cl, DefaultGroup, topic)
	}
}

// TestWaitingBackrunSurvivesRestart: a backrun whose transaction has not
// come yet is committed with its poll and held in Postgres; a forwarder
// started after the first one stopped takes it over and forwards it once
// the transaction comes. Nothing the first one forwarded is sent again.
func TestWaitingBackrunSurvivesRestart(t *testing.T) {
	producer, brokers, pool, b := rig(t)
	origin, backrunTx, otherTx := signed(t, 1, 0), signed(t, 2, 0), signed(t, 3, 0)
	br := backrunOf(t, origin, backrunTx)
	other := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{otherTx}})

	first := start(t, forwarderOn(pool, slowWait, b), brokers)
	produce(t, producer, br, other)
	waitConsumed(t, producer)
	if st, _ := bundleRow(t, pool, mustDecode(t, br).sb.BundleHash); st != topics.BundleReceived {
		t.Fatalf("waiting backrun is %s", st)
	}
	if n := b.sent(otherTx); n != 1 {
		t.Fatalf("other bundle sent %d times before the restart", n)
	}
	first.Close()

	start(t, forwarderOn(pool, slowWait, b), brokers)
	produce(t, producer, txRecordOf(t, origin, topics.RefundPolicy{Percent: 90}))
	poll.Until(t, "the backrun is forwarded after the restart", statusIs(t, pool, br, topics.BundleForwarded))
	waitConsumed(t, producer)
	if n := b.sent(origin, backrunTx); n != 1 {
		t.Errorf("backrun sent %d times, want 1", n)
	}
	if n := b.sent(otherTx); n != 1 {
		t.Errorf("other bundle sent %d times across the restart, want 1", n)
	}
	if n := b.sent(origin); n != 1 {
		t.Errorf("the lone transaction sent %d times, want 1", n)
	}
}

// TestUnsentBundleSurvivesRestart: a bundle the only builder refused is
// committed with its poll; the forwarder after a restart sends it when
// the builder is back.
func TestUnsentBundleSurvivesRestart(t *testing.T) {
	producer, brokers, pool, b := rig(t)
	b.setDown(1 << 20)
	tx := signed(t, 1, 0)
	r := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{tx}})

	first := start(t, forwarderOn(pool, Config{RetryFor: time.Hour}, b), brokers)
	produce(t, producer, r)
	waitConsumed(t, producer)
	poll.Until(t, "the builder refuses the bundle", func() bool { return b.hits() > 0 })
	first.Close()
	if st, _ := bundleRow(t, pool, mustDecode(t, r).sb.BundleHash); st != topics.BundleReceived {
		t.Fatalf("refused bundle is %s", st)
	}

	b.setDown(0)
	start(t, forwarderOn(pool, Config{}, b), brokers)
	poll.Until(t, "the bundle is forwarded after the restart", statusIs(t, pool, r, topics.BundleForwarded))
	if n := b.sent(tx); n != 1 {
		t.Errorf("sent %d times, want 1", n)
	}
}

// TestCrashForwardsOnlyTheUncommittedPollAgain: a forwarder that forwarded
// a poll and died before committing it leaves exactly that poll to be
// forwarded again by the next one: the documented duplicates, no others.
func TestCrashForwardsOnlyTheUncommittedPollAgain(t *testing.T) {
	producer, brokers, pool, b := rig(t)
	var txs []string
	var recs []*kgo.Record
	for i := range 5 {
		txs = append(txs, signed(t, 10+i, 0))
		recs = append(recs, searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{txs[i]}}))
	}
	first := start(t, forwarderOn(pool, Config{}, b), brokers)
	produce(t, producer, recs[:3]...)
	waitConsumed(t, producer)
	first.Close()

	// The crash: the last two records are stored and forwarded, and their
	// offsets never committed.
	produce(t, producer, recs[3:]...)
	var tail []*kgo.Record
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, producer, topics.OrderflowBundles) {
		if r.Offset >= recs[3].Offset && r.Partition == recs[3].Partition || r.Offset >= recs[4].Offset && r.Partition == recs[4].Partition {
			tail = append(tail, r)
		}
	}
	if len(tail) != 2 {
		t.Fatalf("read %d of the last two records", len(tail))
	}
	if err := forwarderOn(pool, Config{}, b).Handle(t.Context(), tail); err != nil {
		t.Fatal(err)
	}

	start(t, forwarderOn(pool, Config{}, b), brokers)
	waitConsumed(t, producer)
	for i, tx := range txs {
		want := 1
		if i >= 3 {
			want = 2
		}
		if n := b.sent(tx); n != want {
			t.Errorf("bundle %d sent %d times, want %d", i, n, want)
		}
	}
}

// TestRebalanceHandsWaitingBackrunsOver: backruns wait at the only
// forwarder of the group, one per partition; a second forwarder joins and
// takes half the partitions. Once the transactions come, each backrun
// reaches builders exactly once, some from the forwarder that joined.
func TestRebalanceHandsWaitingBackrunsOver(t *testing.T) {
	producer, brokers, pool, b1 := rig(t)
	b2 := newFakeBuilder(t)
	manual, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	partitions := 8
	var origins, backrunTxs []string
	var backruns []*kgo.Record
	for i := range partitions {
		origins, backrunTxs = append(origins, signed(t, 20+i, 0)), append(backrunTxs, signed(t, 40+i, 0))
		r := backrunOf(t, origins[i], backrunTxs[i])
		r.Partition = int32(i)
		backruns = append(backruns, r)
	}

	start(t, forwarderOn(pool, slowWait, b1), brokers)
	produce(t, manual, backruns...)
	waitConsumed(t, producer)
	start(t, forwarderOn(pool, slowWait, b2), brokers)
	waitBalanced(t, producer)

	var txRecs []*kgo.Record
	for _, o := range origins {
		txRecs = append(txRecs, txRecordOf(t, o, topics.RefundPolicy{Percent: 90}))
	}
	produce(t, producer, txRecs...)
	for _, r := range backruns {
		poll.Until(t, "every backrun is forwarded", statusIs(t, pool, r, topics.BundleForwarded))
	}
	waitConsumed(t, producer)
	joined := 0
	for i := range partitions {
		n1, n2 := b1.sent(origins[i], backrunTxs[i]), b2.sent(origins[i], backrunTxs[i])
		if n1+n2 != 1 {
			t.Errorf("backrun %d sent %d times by the first forwarder and %d by the second", i, n1, n2)
		}
		joined += n2
	}
	if joined == 0 {
		t.Error("the forwarder that joined forwarded no backrun: nothing was handed over")
	}
}

// waitBalanced waits until both members of the group hold partitions of
// orderflow-bundles.
func waitBalanced(t *testing.T, cl *kgo.Client) {
	t.Helper()
	adm := kadm.NewClient(cl)
	poll.Until(t, "the group is balanced over two members", func() bool {
		groups, err := adm.DescribeGroups(t.Context(), DefaultGroup)
		if err != nil {
			return false
		}
		g := groups[DefaultGroup]
		if g.State != "Stable" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				return false
			}
			held := false
			for _, tp := range a.Topics {
				held = held || tp.Topic == topics.OrderflowBundles && len(tp.Partitions) > 0
			}
			if !held {
				return false
			}
		}
		return true
	})
}
