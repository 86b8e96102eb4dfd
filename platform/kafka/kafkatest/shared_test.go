package kafkatest

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// A test that takes the shared broker finds it as a new one would be: the
// catalog's topics empty, no group, no open transaction, whatever the test
// before it left (records, a group with a live member and committed
// offsets, a transaction it never ended, a topic of its own).
func TestSharedBrokerIsEmptiedForEachTest(t *testing.T) {
	var first []string
	var leftOpen *kgo.Client
	t.Run("leaves everything behind", func(t *testing.T) {
		cl, brokers := Start(t)
		first = brokers
		ctx := testContext(t)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topics.Orders, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "left-behind"); err != nil {
			t.Fatal(err)
		}
		member, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ConsumerGroup("left-group"),
			kgo.ConsumeTopics(topics.Orders), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		if fs := member.PollFetches(ctx); fs.Err0() != nil || fs.NumRecords() != 1 {
			t.Fatalf("the member read %d records (%v)", fs.NumRecords(), fs.Err0())
		}
		if err := member.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		// The member and the producer stay alive past the test, as a
		// killed process's do until their sessions time out.
		t.Cleanup(func() { go member.Close() })
		leftOpen, err = kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.TransactionalID("left-open"))
		if err != nil {
			t.Fatal(err)
		}
		if err := leftOpen.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := leftOpen.ProduceSync(ctx, &kgo.Record{Topic: topics.Fills, Value: []byte("open")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	})
	defer leftOpen.Close()
	t.Run("finds it empty", func(t *testing.T) {
		cl, brokers := Start(t)
		if !slices.Equal(brokers, first) {
			t.Errorf("a second broker %v; the first was %v", brokers, first)
		}
		ctx := testContext(t)
		adm := kadm.NewClient(cl)
		listed, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if listed.Has("left-behind") || len(listed) != len(topics.Catalog()) {
			t.Errorf("topics %v, want the catalog's %d only", listed.Names(), len(topics.Catalog()))
		}
		for _, tp := range []string{topics.Orders, topics.Fills} {
			if recs := ReadUncommitted(ctx, t, cl, tp); len(recs) != 0 {
				t.Errorf("%s holds %d records of the test before", tp, len(recs))
			}
		}
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != 0 {
			t.Errorf("groups left: %v", groups.Groups())
		}
		open, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		if err != nil {
			t.Fatal(err)
		}
		if len(open) != 0 {
			t.Errorf("transactions left open: %v", open.TransactionalIDs())
		}
		// The id of the transaction left open serves a new producer at once.
		transactTopic(t, brokers, topics.Fills, "new")
		if recs := ReadToEnd(ctx, t, cl, topics.Fills); len(recs) != 1 || string(recs[0].Value) != "new" {
			t.Errorf("fills after a new transaction under the old id: %d records", len(recs))
		}
	})
}

// transactTopic commits value to topic in one transaction of the
// transactional id "left-open".
func transactTopic(t *testing.T, brokers []string, topic, value string) {
	t.Helper()
	ctx := testContext(t)
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.TransactionalID("left-open"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// Empty gives the test that holds the broker an empty one again, on the
// same addresses; Empty without holding the broker fails the test.
func TestEmptyEmptiesTheBrokerAgain(t *testing.T) {
	cl, brokers := Start(t)
	ctx := testContext(t)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topics.Orders, Value: []byte("first run")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	Empty(t)
	if got := Shared(t); !slices.Equal(got, brokers) {
		t.Errorf("after Empty the broker is at %v, before at %v", got, brokers)
	}
	if recs := ReadUncommitted(ctx, t, cl, topics.Orders); len(recs) != 0 {
		t.Errorf("%s holds %d records of the first run", topics.Orders, len(recs))
	}
	var stranger fatalRecorder
	stranger.TB = t
	done := make(chan struct{})
	go func() { defer close(done); Empty(&other{&stranger}) }()
	<-done
	if !strings.Contains(stranger.msg, "does not hold the shared broker") {
		t.Errorf("Empty by a test without the broker: %q", stranger.msg)
	}
}

// other is a test distinct from the one it wraps.
type other struct{ *fatalRecorder }
