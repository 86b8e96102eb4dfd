package kafkatest

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
)

const topic = "kafkatest"

func TestMain(m *testing.M) { Main(m) }

// manual has a writer put each record on the partition it names.
func manual() kgo.Opt { return kgo.RecordPartitioner(kgo.ManualPartitioner()) }

func start(t *testing.T) (*kgo.Client, []string) {
	t.Helper()
	ctx := testContext(t)
	brokers := Shared(t)
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, manual())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return cl, brokers
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func rec(p int32, v string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}
}

// transact writes values to partition p in one transaction and commits or
// aborts it.
func transact(t *testing.T, brokers []string, p int32, commit bool, values ...string) {
	t.Helper()
	ctx := testContext(t)
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, manual(), kgo.TransactionalID("kafkatest-writer"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, rec(p, v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// ReadToEnd returns the committed records of every partition and ends,
// whether the last offset below the end holds a record, a commit marker
// or an abort marker; aborted records and markers are left out.
func TestReadToEndReadsPlainAndTransactionalPartitions(t *testing.T) {
	cl, brokers := start(t)
	if err := cl.ProduceSync(testContext(t), rec(0, "a"), rec(0, "b")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	transact(t, brokers, 1, true, "c", "d")
	transact(t, brokers, 1, false, "aborted")
	transact(t, brokers, 1, true, "e")
	transact(t, brokers, 2, true, "f")
	transact(t, brokers, 2, false, "aborted")

	got := map[int32]string{}
	for _, r := range ReadToEnd(testContext(t), t, cl, topic) {
		if r.Attrs.IsControl() {
			t.Errorf("control record at %d/%d", r.Partition, r.Offset)
		}
		got[r.Partition] += string(r.Value)
	}
	want := map[int32]string{0: "ab", 1: "cde", 2: "f"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v", got, want)
	}

	// Read uncommitted, the log holds the aborted records and every marker.
	all := map[int32]string{}
	for _, r := range ReadUncommitted(testContext(t), t, cl, topic) {
		if r.Attrs.IsControl() {
			all[r.Partition] += "|"
			continue
		}
		all[r.Partition] += string(r.Value)
	}
	want = map[int32]string{0: "ab", 1: "cd|aborted|e|", 2: "f|aborted|"}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("read uncommitted %v, want %v", all, want)
	}
}

// fatalRecorder stops the goroutine that calls Fatalf and keeps the
// message, so a test can see a helper give up.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// WaitConsumed gives up while the group is short of the end on one
// partition and returns once it committed the end of every partition
// that holds records.
func TestWaitConsumedWaitsForTheGroupsCommits(t *testing.T) {
	cl, brokers := start(t)
	if err := cl.ProduceSync(testContext(t), rec(0, "a"), rec(0, "b"), rec(1, "c")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	group, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ConsumerGroup("g"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	var recs []*kgo.Record
	for len(recs) < 3 {
		fs := group.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, fs.Records()...)
	}
	var first []*kgo.Record
	for _, r := range recs {
		if r.Partition == 1 || r.Offset == 0 {
			first = append(first, r)
		}
	}
	if err := group.CommitRecords(testContext(t), first...); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); WaitConsumed(short, rec, cl, "g", topic) }()
	<-done
	if rec.msg == "" {
		t.Fatal("WaitConsumed returned while partition 0 was committed at 1 of 2")
	}

	if err := group.CommitRecords(testContext(t), recs...); err != nil {
		t.Fatal(err)
	}
	WaitConsumed(testContext(t), t, cl, "g", topic)
}
