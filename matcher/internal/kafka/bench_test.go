package kafka

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
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
//     transaction, until the last command is committed;
//   - kafka-only: the matcher path again, on a second broker, with each
//     record's outputs computed before the clock starts, so it measures the
//     matcher's Kafka work (consume, transactional produce of the same
//     outputs, commit) without its matching: the most the matcher could
//     reach with an engine that cost nothing.
//
// Both paths produce the same records, encoded before the clock starts (encoding
// commands is ingress's work, not the matcher's), and the clock of the matcher
// path starts once the matcher holds its partitions, as the raw consumer is
// created before its clock starts. It prints records/s for both and the ratio
// matcher/raw, and kafka-only/raw. Each iteration uses fresh brokers;
// -benchtime 1x is enough for a figure.
func BenchmarkEndToEnd(b *testing.B) {
	var rawSecs, matcherSecs, kafkaSecs float64
	var rawCPU, matcherCPU, kafkaCPU time.Duration
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
		m, n := measureMatcher(b, ctx, cfg, envs, nil)
		b.StopTimer()
		cfg2 := startBroker(b, ctx)
		outputsOf := precomputed(b, commandRecords(b, envs))
		b.StartTimer()
		k, _ := measureMatcher(b, ctx, cfg2, envs, outputsOf)
		rawSecs += raw.wall.Seconds()
		matcherSecs += m.wall.Seconds()
		kafkaSecs += k.wall.Seconds()
		rawCPU += raw.cpu
		matcherCPU += m.cpu
		kafkaCPU += k.cpu
		outputs += n
		cancel()
	}
	n := float64(b.N)
	records := float64(benchRecordsOf(b))
	raw, matcher, kafka := records*n/rawSecs, records*n/matcherSecs, records*n/kafkaSecs
	b.ReportMetric(raw, "raw-records/s")
	b.ReportMetric(matcher, "matcher-records/s")
	b.ReportMetric(matcher/raw, "matcher/raw")
	b.ReportMetric(kafka/raw, "kafka-only/raw")
	b.ReportMetric(float64(outputs)/n/records, "outputs/record")
	perRecord := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n / records }
	b.ReportMetric(perRecord(rawCPU), "raw-cpu-µs/record")
	b.ReportMetric(perRecord(matcherCPU), "matcher-cpu-µs/record")
	b.ReportMetric(perRecord(kafkaCPU), "kafka-only-cpu-µs/record")
	b.Logf("raw produce+consume %.0f records/s (%.2f µs of CPU a record); matcher end to end %.0f records/s (%.2f µs), ratio %.2f; "+
		"the matcher's Kafka work alone %.0f records/s (%.2f µs), ratio %.2f",
		raw, perRecord(rawCPU), matcher, perRecord(matcherCPU), matcher/raw, kafka, perRecord(kafkaCPU), kafka/raw)
}

// precomputed applies recs, partition by partition in the order they are
// produced (each partition's offsets follow it), to fresh engines, and
// returns a lookup of each record's outputs by partition and offset.
func precomputed(b *testing.B, recs []*kgo.Record) func(*kgo.Record) []engine.Output {
	b.Helper()
	engines := map[int32]*engine.Engine{}
	outs := map[int32][][]engine.Output{}
	for _, r := range recs {
		e := engines[r.Partition]
		if e == nil {
			e = engine.New()
			engines[r.Partition] = e
		}
		o, err := e.ApplyRecord(r.Value)
		if err != nil {
			b.Fatal(err)
		}
		outs[r.Partition] = append(outs[r.Partition], slices.Clone(o))
	}
	return func(r *kgo.Record) []engine.Output { return outs[r.Partition][r.Offset] }
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

// measureMatcher times the matcher path; outputsOf, when not nil, stands in
// for its engines.
func measureMatcher(b *testing.B, ctx context.Context, cfg pkafka.Config, envs []topics.Envelope, outputsOf func(*kgo.Record) []engine.Output) (measured, int64) {
	b.Helper()
	l, err := New(Config{Kafka: cfg, TransactionalID: fmt.Sprintf("matcher-bench-%d", time.Now().UnixNano()), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.outputsOf = outputsOf
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
