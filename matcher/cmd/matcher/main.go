// Command matcher runs one matcher instance. See docs/deploy.md for the
// shared environment; its own variables are MATCHER_INSTANCE_ID (default:
// the host name, stable per pod), MATCHER_GROUP (matcher) and
// MATCHER_MAX_BATCH (10000 records per transaction) and
// MATCHER_SNAPSHOT_EVERY (50000 input records of a partition between two
// snapshots of its state; -1 turns snapshots off) and MATCHER_STATIC_MEMBER
// (false; true joins the group with the instance id as a static member).
package main

import (
	"context"
	"os"

	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("matcher", process.Needs{Kafka: true}, build))
}

func build(_ context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	host, _ := os.Hostname()
	cfg := matcher.Config{
		Kafka:         kafka.Config{Brokers: p.Common.KafkaBrokers, ClientID: "matcher", Compression: p.Common.KafkaCompression},
		Group:         r.String("MATCHER_GROUP", "matcher"),
		InstanceID:    r.String("MATCHER_INSTANCE_ID", host),
		StaticMember:  r.Bool("MATCHER_STATIC_MEMBER", false),
		MaxBatch:      r.Int("MATCHER_MAX_BATCH", 10_000, 1, 1_000_000),
		SnapshotEvery: snapshotEvery(r),
		Logger:        p.Log,
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	m, err := matcher.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := m.RegisterMetrics(p.Registry); err != nil {
		m.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error {
		defer m.Close()
		return m.Run(ctx)
	}
	return nil, []func(context.Context) error{run}, nil
}

// snapshotEvery reads MATCHER_SNAPSHOT_EVERY: -1 turns snapshots off,
// 1 to 100,000,000 input records of a partition go between two snapshots
// (50,000). 0 is refused: matcher.Config takes it for the default, which
// an operator writing 0 to turn snapshots off would not expect.
func snapshotEvery(r *config.Reader) int {
	n := r.Int("MATCHER_SNAPSHOT_EVERY", 50_000, -1, 100_000_000)
	if n == 0 {
		r.Fail("MATCHER_SNAPSHOT_EVERY=0: want -1 (no snapshots) or 1 to 100000000 records")
		return 50_000
	}
	return n
}
