package matcher

import (
	"os"

	"blockspace.exchange/matcher/internal/kafkaloop"
	"blockspace.exchange/platform/config"
)

// ConfigFromEnv reads a matcher instance's variables (docs/deploy.md):
//
//   - MATCHER_GROUP (matcher): the consumer group shared by all instances;
//   - MATCHER_INSTANCE_ID (the host name, stable per pod): the
//     transactional id, unique among running instances;
//   - MATCHER_STATIC_MEMBER (false): join the group with the instance id
//     as a static member;
//   - MATCHER_MAX_BATCH (10000, 1 to 1000000): records per transaction;
//   - MATCHER_SNAPSHOT_EVERY (50000, 1 to 100000000, or -1 for none):
//     input records of a partition between two snapshots of its state.
//
// Kafka's brokers and compression are the process's own (process.Common);
// the caller sets them in Kafka. Errors are reported on r.
func ConfigFromEnv(r *config.Reader) Config {
	host, _ := os.Hostname()
	return Config{
		Group:         r.String("MATCHER_GROUP", kafkaloop.DefaultGroup),
		InstanceID:    r.String("MATCHER_INSTANCE_ID", host),
		StaticMember:  r.Bool("MATCHER_STATIC_MEMBER", false),
		MaxBatch:      r.Int("MATCHER_MAX_BATCH", kafkaloop.DefaultMaxPollRecords, 1, 1_000_000),
		SnapshotEvery: snapshotEvery(r),
	}
}

// snapshotEvery reads MATCHER_SNAPSHOT_EVERY. 0 is refused: Config takes
// it for the default, which an operator writing 0 to turn snapshots off
// would not expect.
func snapshotEvery(r *config.Reader) int {
	n := r.Int("MATCHER_SNAPSHOT_EVERY", kafkaloop.DefaultSnapshotEvery, -1, 100_000_000)
	if n == 0 {
		r.Fail("MATCHER_SNAPSHOT_EVERY=0: want -1 (no snapshots) or 1 to 100000000 records")
		return kafkaloop.DefaultSnapshotEvery
	}
	return n
}
