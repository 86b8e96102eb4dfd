package kafkaloop

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// stale reports whether partition p needs a new engine before the record
// at offset first: it has none, or one that went past first (the group
// rewound, or another instance moved the partition on and back).
func (l *Loop) stale(p int32, first int64) bool {
	part := l.parts[p]
	return part == nil || part.next > first
}

// ready returns the engine of partition p, brought up to date so that the
// record at offset first is the next it applies. snaps holds what
// matcher-snapshots stores of the partitions that were stale.
func (l *Loop) ready(ctx context.Context, p int32, first int64, snaps map[int32]storedSnapshots) (*partition, error) {
	if l.stale(p, first) {
		l.parts[p] = l.restore(p, first, snaps[p])
	}
	part := l.parts[p]
	if part.next == first {
		return part, nil
	}
	if part.next < first {
		if err := l.catchUp(ctx, p, part, first); err != nil {
			delete(l.parts, p)
			return nil, err
		}
		l.stats.Rebuilds.Add(1)
	}
	return part, nil
}

// catchUp applies the records of partition p from part.next up to (not
// including) offset until, discarding outputs: the transactions that
// processed those records published them. Offsets between records that
// hold no record (transaction markers, aborted records) are skipped by
// the read_committed reader.
func (l *Loop) catchUp(ctx context.Context, p int32, part *partition, until int64) error {
	cl, err := kafka.NewClient(l.cfg.Kafka, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topics.Orders: {p: kgo.NewOffset().At(part.next)},
	}))
	if err != nil {
		return fmt.Errorf("rebuild partition %d: %w", p, err)
	}
	defer cl.Close()
	for part.next < until {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rebuild partition %d at offset %d: %w", p, part.next, err)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			l.log.Warn("matcher: rebuild fetch", "partition", p, "err", err)
		})
		for _, r := range fetches.Records() {
			if r.Offset >= until {
				part.next = until
				break
			}
			l.apply(part, r)
			l.stats.RebuildRecords.Add(1)
		}
	}
	return nil
}
