package kafkaloop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/topics"
)

// benchRecords is the number of command records of one measured run.
const benchRecords = 160_000

// BenchmarkEndToEnd measures, on franz-go's in-process fake broker (kfake)
// and on a real Apache Kafka broker in the same run, the same order
// commands (16 slots on 16 partitions; limit orders of a seller and a buyer
// alternating over nine prices, so about half trade and each command yields
// two to four outputs) going
//
//   - raw: franz-go produces them to a scratch topic of 16 partitions and a
//     read_committed consumer reads them back; this runs first on each of
//     the two brokers of a kind (so that a real broker's JVM has compiled
//     its hot code before a matcher path), and its figure is the mean;
//   - matcher: franz-go produces them to orders, and the matcher consumes,
//     matches, produces order events and fills and commits, transaction by
//     transaction, until the last command is committed;
//   - kafka-only: the matcher path again, on a second broker of the same
//     kind, with each record's outputs computed before the clock starts, so
//     it measures the matcher's Kafka work (consume, transactional produce
//     of the same outputs, commit) without its matching: the most the
//     matcher could reach with an engine that cost nothing.
//
// Every path produces the same records, encoded before the clock starts
// (encoding commands is ingress's work, not the matcher's), and the clock of
// the matcher path starts once the matcher holds its partitions, as the raw
// consumer is created before its clock starts. For each broker it prints
// records/s of each path, the ratios matcher/raw and kafka-only/raw against
// the raw round trip on the same broker, and the CPU time a record took:
// this process (clients and matcher, and kfake, which runs in it) plus the
// real broker's JVM. Each iteration uses fresh brokers; -benchtime 1x is
// enough for a figure.
func BenchmarkEndToEnd(b *testing.B) {
	kinds := []benchBroker{
		{"kfake", func(b *testing.B, ctx context.Context) (kafka.Config, func() time.Duration, func()) {
			return startEmbedded(b, ctx), func() time.Duration { return 0 }, func() {}
		}},
		{"kafka", func(b *testing.B, ctx context.Context) (kafka.Config, func() time.Duration, func()) {
			k := kafkatest.StartBroker(b)
			return brokerConfig(b, k), jvmCPU(b, k), func() { _ = k.Node().Kill() }
		}},
	}
	totals := make([]pathTotals, len(kinds))
	for range b.N {
		for i, kind := range kinds {
			b.StopTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			slots := make([]uint64, 16)
			for i := range slots {
				slots[i] = uint64(1000 + i)
			}
			envs := commandStream(b, slots, benchRecords/len(slots))
			cfg, brokerCPU, stopBroker := kind.start(b, ctx)
			cpu := func() time.Duration { return processCPU() + brokerCPU() }
			b.StartTimer()
			raw := measureRaw(b, ctx, cfg, cpu, envs)
			m, n := measureMatcher(b, ctx, cfg, cpu, envs, nil)
			b.StopTimer()
			stopBroker() // an idle JVM would take CPU from the next path
			cfg2, brokerCPU2, stopBroker2 := kind.start(b, ctx)
			cpu2 := func() time.Duration { return processCPU() + brokerCPU2() }
			outputsOf := precomputed(b, commandRecords(b, envs))
			b.StartTimer()
			// The raw path again, first on this broker as on the other, so
			// that a real broker's JVM has compiled its hot code before
			// the matcher path is timed on it.
			raw2 := measureRaw(b, ctx, cfg2, cpu2, envs)
			k, _ := measureMatcher(b, ctx, cfg2, cpu2, envs, outputsOf)
			b.StopTimer()
			stopBroker2()
			totals[i].add(raw, m, k, n)
			totals[i].addRaw(raw2)
			cancel()
		}
	}
	records := float64(benchRecordsOf(b))
	for i, kind := range kinds {
		totals[i].report(b, kind.name, float64(b.N), records)
	}
}

// benchBroker starts a broker of one kind for the benchmark and returns
// how to reach it, the CPU time spent so far by the broker's own process
// (0 for a broker inside this process), and how to stop it early.
type benchBroker struct {
	name  string
	start func(*testing.B, context.Context) (kafka.Config, func() time.Duration, func())
}

// pathTotals sums the three paths' times over iterations on one kind of
// broker.
type pathTotals struct {
	raw, matcher, kafka measured
	rawRuns             float64 // the raw path runs on both brokers
	outputs             int64
}

func (p *pathTotals) addRaw(raw measured) {
	p.raw.wall += raw.wall
	p.raw.cpu += raw.cpu
	p.rawRuns++
}

func (p *pathTotals) add(raw, matcher, kafka measured, outputs int64) {
	p.addRaw(raw)
	p.matcher.wall += matcher.wall
	p.matcher.cpu += matcher.cpu
	p.kafka.wall += kafka.wall
	p.kafka.cpu += kafka.cpu
	p.outputs += outputs
}

func (p *pathTotals) report(b *testing.B, name string, n, records float64) {
	raw, matcher, kafka := records*p.rawRuns/p.raw.wall.Seconds(), records*n/p.matcher.wall.Seconds(), records*n/p.kafka.wall.Seconds()
	perRecord := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n / records }
	rawPerRecord := float64(p.raw.cpu.Nanoseconds()) / 1e3 / p.rawRuns / records
	b.ReportMetric(raw, name+"-raw-records/s")
	b.ReportMetric(matcher, name+"-matcher-records/s")
	b.ReportMetric(matcher/raw, name+"-matcher/raw")
	b.ReportMetric(kafka/raw, name+"-kafka-only/raw")
	b.ReportMetric(float64(p.outputs)/n/records, name+"-outputs/record")
	b.ReportMetric(rawPerRecord, name+"-raw-cpu-µs/record")
	b.ReportMetric(perRecord(p.matcher.cpu), name+"-matcher-cpu-µs/record")
	b.ReportMetric(perRecord(p.kafka.cpu), name+"-kafka-only-cpu-µs/record")
	b.Logf("%s: raw produce+consume %.0f records/s (%.2f µs of CPU a record); matcher end to end %.0f records/s (%.2f µs), ratio %.2f; "+
		"the matcher's Kafka work alone %.0f records/s (%.2f µs), ratio %.2f",
		name, raw, rawPerRecord, matcher, perRecord(p.matcher.cpu), matcher/raw, kafka, perRecord(p.kafka.cpu), kafka/raw)
}

// jvmCPU returns the CPU time the broker's JVM has used so far: the
// process whose command line names the node's server.properties.
func jvmCPU(b *testing.B, k *kafkatest.Broker) func() time.Duration {
	b.Helper()
	props := filepath.Join(filepath.Dir(k.Node().LogPath()), "server.properties")
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range procs {
		cmdline, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(cmdline, []byte(props)) || !strings.HasPrefix(filepath.Base(string(bytes.SplitN(cmdline, []byte{0}, 2)[0])), "java") {
			continue
		}
		stat := filepath.Join(filepath.Dir(path), "stat")
		return func() time.Duration { return procCPU(stat) }
	}
	b.Fatalf("no java process runs %s", props)
	return nil
}

// procCPU reads a process's user and system time from its /proc stat
// file; 0 once the process is gone.
func procCPU(stat string) time.Duration {
	raw, err := os.ReadFile(stat)
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after it do not.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
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

// measured is one path's wall time and the CPU time the clients, the
// matcher and the broker spent meanwhile.
type measured struct{ wall, cpu time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measureRaw(b *testing.B, ctx context.Context, cfg kafka.Config, cpuNow func() time.Duration, envs []topics.Envelope) measured {
	b.Helper()
	const scratch = "bench-raw"
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 16, -1, nil, scratch); err != nil {
		b.Fatal(err)
	}
	waitLeaders(b, cl, map[string]int{scratch: 16})
	recs := commandRecords(b, envs)
	for _, r := range recs {
		r.Topic = scratch
	}
	consumer, err := kafka.NewClient(cfg, kgo.ConsumeTopics(scratch), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer consumer.Close()
	start, cpu := time.Now(), cpuNow()
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
	return measured{time.Since(start), cpuNow() - cpu}
}

// measureMatcher times the matcher path; outputsOf, when not nil, stands in
// for its engines.
func measureMatcher(b *testing.B, ctx context.Context, cfg kafka.Config, cpuNow func() time.Duration, envs []topics.Envelope, outputsOf func(*kgo.Record) []engine.Output) (measured, int64) {
	b.Helper()
	l, err := New(Config{Kafka: cfg, TransactionalID: fmt.Sprintf("matcher-bench-%d", time.Now().UnixNano()), Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	l.outputsOf = outputsOf
	recs := commandRecords(b, envs)
	producer, err := kafka.NewClient(cfg)
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
	start, cpu := time.Now(), cpuNow()
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
	m := measured{time.Since(start), cpuNow() - cpu}
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return m, l.Stats().Outputs.Load()
}
