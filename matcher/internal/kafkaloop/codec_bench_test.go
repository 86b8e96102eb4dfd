package kafkaloop

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/topics"
)

// BenchmarkOutputCodecs measures the matcher path of BenchmarkEndToEnd on
// a real Apache Kafka broker once per codec of KAFKA_COMPRESSION, with the
// commands and the matcher's outputs produced in that codec: records/s,
// the CPU time a command took (this process and the broker's JVM), and
// the bytes the broker keeps of order-events and fills a command. Each
// codec gets a fresh broker, warmed by one raw round trip first.
//
//	go test -run '^$' -bench OutputCodecs -benchtime 1x ./matcher/internal/kafkaloop/
func BenchmarkOutputCodecs(b *testing.B) {
	for _, codec := range []string{"snappy", "lz4", "zstd", "gzip", "none"} {
		b.Run(codec, func(b *testing.B) {
			var wall, cpu time.Duration
			var logBytes int64
			for range b.N {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				slots := make([]uint64, 16)
				for i := range slots {
					slots[i] = uint64(1000 + i)
				}
				envs := commandStream(b, slots, benchRecords/len(slots))
				k := kafkatest.StartBroker(b)
				cfg := brokerConfig(b, k)
				cfg.Compression = codec
				brokerCPU := jvmCPU(b, k)
				cpuNow := func() time.Duration { return processCPU() + brokerCPU() }
				measureRaw(b, ctx, cfg, cpuNow, envs)
				b.StartTimer()
				m, _ := measureMatcher(b, ctx, cfg, cpuNow, envs, nil)
				b.StopTimer()
				wall, cpu = wall+m.wall, cpu+m.cpu
				logBytes += topicBytes(b, ctx, kadm.NewClient(k.Client(b)), topics.OrderEvents, topics.Fills)
				_ = k.Node().Kill()
				cancel()
			}
			records := float64(benchRecordsOf(b)) * float64(b.N)
			b.ReportMetric(records/wall.Seconds(), "records/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/records, "cpu-µs/record")
			b.ReportMetric(float64(logBytes)/records, "output-bytes/record")
		})
	}
}

// topicBytes is the size of the topics' logs on the broker.
func topicBytes(b *testing.B, ctx context.Context, adm *kadm.Client, names ...string) int64 {
	b.Helper()
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			for _, name := range names {
				if p.Topic == name {
					n += p.Size
				}
			}
		})
	})
	return n
}
