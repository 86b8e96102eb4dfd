package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pkafka "blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// benchRecords is the number of command records of one measured run.
const benchRecords = 40_000

// BenchmarkEndToEnd measures, in one run on one embedded broker, the same
// order commands (16 slots on 16 partitions; limit orders of a seller and a
// buyer alternating over nine prices, so about half trade and each command
// yields two to four outputs) going
//
//   - raw: franz-go produces them to a scratch topic of 16 partitions and a
//     read_committed consumer reads them back;
//   - matcher: franz-go produces them to orders, and the matcher consumes,
//     matches, produces order events and fills and commits, transaction by
//     transaction, until the last command is committed.
//
// Both paths produce the same records, encoded before the clock starts (encoding
// commands is ingress's work, not the matcher's), and the clock of the matcher
// path starts once the matcher holds its partitions, as the raw consumer is
// created before its clock starts. It prints records/s for both and the ratio
// matcher/raw. Each iteration uses a fresh broker; -benchtime 1x is enough for
// a figure.
func BenchmarkEndToEnd(b *testing.B) {
	var rawSecs, matcherSecs float64
	var outputs int64
	for range b.N {
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cfg := startBroker(b, ctx)
		slots := make([]uint64, 16)
		for i := range slots {
			slots[i] = uint64(1000 + i)
		}
		envs := commandStream(b, slots, benchRecords/len(slots))
		b.StartTimer()

		rawSecs += measureRaw(b, ctx, cfg, envs).Seconds()
		d, n := measureMatcher(b, ctx, cfg, envs)
		matcherSecs += d.Seconds()
		outputs += n
		cancel()
	}
	n := float64(b.N)
	records := float64(benchRecordsOf(b))
	raw, matcher := records*n/rawSecs, records*n/matcherSecs
	b.ReportMetric(raw, "raw-records/s")
	b.ReportMetric(matcher, "matcher-records/s")
	b.ReportMetric(matcher/raw, "matcher/raw")
	b.ReportMetric(float64(outputs)/n/records, "outputs/record")
	b.Logf("raw produce+consume %.0f records/s; matcher end to end %.0f records/s; ratio %.2f", raw, matcher, matcher/raw)
}

// benchRecordsOf is the exact record count of the stream built above.
func benchRecordsOf(b *testing.B) int {
	slots := make([]uint64, 16)
	return len(commandStream(b, slots, benchRecords/len(slots)))
}

func measureRaw(b *testing.B, ctx context.Context, cfg pkafka.Config, envs []topics.Envelope) time.Duration {
	b.Helper()
	const scratch = "bench-raw"
	cl, err := pkafka.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 16, -1, nil, scratch); err != nil {
		b.Fatal(err)
	}
	recs := commandRecords(b, envs)
	for _, r := range recs {
		r.Topic = scratch
	}
	consumer, err := pkafka.NewClient(cfg, kgo.ConsumeTopics(scratch), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer consumer.Close()
	start := time.Now()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	for got := 0; got < len(recs); {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatal(ctx.Err())
		}
		got += fetches.NumRecords()
	}
	return time.Since(start)
}

func measureMatcher(b *testing.B, ctx context.Context, cfg pkafka.Config, envs []topics.Envelope) (time.Duration, int64) {
	b.Helper()
	l, err := New(Config{Kafka: cfg, TransactionalID: fmt.Sprintf("matcher-bench-%d", time.Now().UnixNano()), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	recs := commandRecords(b, envs)
	producer, err := pkafka.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	orders, _ := topics.Lookup(topics.Orders)
	for l.Stats().Assigned.Load() < int64(orders.Partitions) {
		select {
		case err := <-done:
			b.Fatalf("matcher stopped: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	start := time.Now()
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	// The clock stops when the transaction of the last command has
	// committed: its outputs are flushed and readable read_committed.
	for l.Stats().Committed.Load() < int64(len(envs)) {
		select {
		case err := <-done:
			b.Fatalf("matcher stopped: %v", err)
		case <-time.After(100 * time.Microsecond):
		}
	}
	d := time.Since(start)
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return d, l.Stats().Outputs.Load()
}
