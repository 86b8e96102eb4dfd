package kafka

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	pkafka "blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// benchRecords is the number of command records of one measured run.
const benchRecords = 160_000

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
	var rawCPU, matcherCPU time.Duration
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

		raw := measureRaw(b, ctx, cfg, envs)
		m, n := measureMatcher(b, ctx, cfg, envs)
		rawSecs += raw.wall.Seconds()
		matcherSecs += m.wall.Seconds()
		rawCPU += raw.cpu
		matcherCPU += m.cpu
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
	rawCPUPer := float64(rawCPU.Nanoseconds()) / 1e3 / n / records
	matcherCPUPer := float64(matcherCPU.Nanoseconds()) / 1e3 / n / records
	b.ReportMetric(rawCPUPer, "raw-cpu-µs/record")
	b.ReportMetric(matcherCPUPer, "matcher-cpu-µs/record")
	b.Logf("raw produce+consume %.0f records/s (%.2f µs of CPU a record); matcher end to end %.0f records/s (%.2f µs); ratio %.2f",
		raw, rawCPUPer, matcher, matcherCPUPer, matcher/raw)
}

// benchRecordsOf is the exact record count of the stream built above.
func benchRecordsOf(b *testing.B) int {
	slots := make([]uint64, 16)
	return len(commandStream(b, slots, benchRecords/len(slots)))
}

// measured is one path's wall time and the CPU time the process (clients,
// broker and matcher alike) spent meanwhile.
type measured struct{ wall, cpu time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measureRaw(b *testing.B, ctx context.Context, cfg pkafka.Config, envs []topics.Envelope) measured {
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
	start, cpu := time.Now(), processCPU()
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
	return measured{time.Since(start), processCPU() - cpu}
}

func measureMatcher(b *testing.B, ctx context.Context, cfg pkafka.Config, envs []topics.Envelope) (measured, int64) {
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
	start, cpu := time.Now(), processCPU()
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
	m := measured{time.Since(start), processCPU() - cpu}
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return m, l.Stats().Outputs.Load()
}
