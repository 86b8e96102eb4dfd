package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	pkafka "blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Snapshots bound the rebuild of a partition (docs/matcher.md
// "Snapshots"). Every Config.SnapshotEvery input records, a partition's
// worker writes the state of every slot its engine holds to the same
// partition of matcher-snapshots, keyed by slot, with the offset of the
// next orders record, in the transaction that commits the outputs and
// offsets up to there; slots the engine dropped since the previous round
// get a tombstone. All records of a round carry the same offset, and a
// round is committed whole or not at all, so the newest record of every
// key is from the last committed round.

// snapshot writes a round for part, which has applied every record before
// part.next.
func (l *Loop) snapshot(ctx context.Context, part *partition, p int32, produced *producedErr) error {
	at := time.UnixMilli(part.lastTime)
	written := make(map[uint64]bool)
	for _, n := range part.engine.Slots() {
		state, ok, err := part.engine.SnapshotSlot(n)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		env, err := topics.MatcherSnapshot{Slot: n, Offset: part.next, State: state}.Envelope(at)
		if err != nil {
			return fmt.Errorf("snapshot slot %d: %w", n, err)
		}
		value, err := topics.Encode(env)
		if err != nil {
			return fmt.Errorf("snapshot slot %d: %w", n, err)
		}
		l.sess.Produce(ctx, &kgo.Record{Topic: topics.MatcherSnapshots, Partition: p, Key: topics.SlotKey(n), Value: value,
			Headers: recordHeaders(env)}, produced.record)
		written[n] = true
	}
	for n := range part.snapshotted {
		if !written[n] {
			l.sess.Produce(ctx, &kgo.Record{Topic: topics.MatcherSnapshots, Partition: p, Key: topics.SlotKey(n)}, produced.record)
		}
	}
	part.snapshotted = written
	part.sinceSnapshot = 0
	l.stats.Snapshots.Add(1)
	return nil
}

// restore returns a partition whose engine holds the last committed
// snapshot round snaps of p, and whose next record is the round's offset;
// with no round (or one beyond first, which a committed group offset
// cannot be), it returns an empty engine at offset 0.
func (l *Loop) restore(p int32, first int64, snaps map[uint64]topics.MatcherSnapshot) *partition {
	part := &partition{engine: engine.New()}
	var offset int64 = -1
	for _, s := range snaps {
		if offset >= 0 && s.Offset != offset {
			l.log.Warn("matcher: snapshots of one partition disagree on their offset; reading the partition from its start",
				"partition", p, "offsets", []int64{offset, s.Offset})
			return &partition{engine: engine.New()}
		}
		offset = s.Offset
	}
	if offset < 0 || offset > first {
		return part
	}
	part.snapshotted = make(map[uint64]bool)
	for n, s := range snaps {
		if err := part.engine.RestoreSlot(s.State); err != nil {
			l.log.Warn("matcher: snapshot does not load; reading the partition from its start", "partition", p, "slot", n, "err", err)
			return &partition{engine: engine.New()}
		}
		part.snapshotted[n] = true
	}
	part.next = offset
	l.stats.SnapshotsLoaded.Add(1)
	return part
}

// readSnapshots reads partitions ps of matcher-snapshots, read_committed,
// up to their last stable offsets, and returns per partition the newest
// snapshot of each slot that has one. One client reads them all, so a
// fresh assignment costs one round of requests, not one per partition.
func readSnapshots(ctx context.Context, cfg pkafka.Config, log *slog.Logger, ps []int32) (map[int32]map[uint64]topics.MatcherSnapshot, error) {
	out := make(map[int32]map[uint64]topics.MatcherSnapshot, len(ps))
	for _, p := range ps {
		out[p] = make(map[uint64]topics.MatcherSnapshot)
	}
	if len(ps) == 0 {
		return out, nil
	}
	ends, err := snapshotBounds(ctx, cfg, ps)
	if err != nil {
		return nil, err
	}
	if len(ends) == 0 {
		return out, nil
	}
	from := make(map[int32]kgo.Offset, len(ends))
	for p := range ends {
		from[p] = kgo.NewOffset().AtStart()
	}
	cl, err := pkafka.NewClient(cfg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topics.MatcherSnapshots: from}),
		kgo.KeepControlRecords())
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	defer cl.Close()
	for len(ends) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read snapshots: %w", err)
		}
		fetches.EachError(func(_ string, p int32, err error) {
			log.Warn("matcher: read snapshots", "partition", p, "err", err)
		})
		for _, r := range fetches.Records() {
			end, reading := ends[r.Partition]
			if !reading || r.Offset >= end {
				continue
			}
			if r.Offset >= end-1 {
				delete(ends, r.Partition)
			}
			if !r.Attrs.IsControl() {
				applySnapshotRecord(log, r, out[r.Partition])
			}
		}
	}
	return out, nil
}

// snapshotBounds returns the last stable offset of each partition of ps
// that holds records below it.
func snapshotBounds(ctx context.Context, cfg pkafka.Config, ps []int32) (map[int32]int64, error) {
	cl, err := pkafka.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListCommittedOffsets(ctx, topics.MatcherSnapshots)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: end offsets: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics.MatcherSnapshots)
	if err != nil {
		return nil, fmt.Errorf("read snapshots: start offsets: %w", err)
	}
	bounds := make(map[int32]int64)
	for _, p := range ps {
		end, ok := ends.Lookup(topics.MatcherSnapshots, p)
		start, ok2 := starts.Lookup(topics.MatcherSnapshots, p)
		if !ok || !ok2 || end.Err != nil || start.Err != nil {
			return nil, fmt.Errorf("read snapshots: no offsets of partition %d (%v, %v)", p, end.Err, start.Err)
		}
		if end.Offset > start.Offset {
			bounds[p] = end.Offset
		}
	}
	return bounds, nil
}

func applySnapshotRecord(log *slog.Logger, r *kgo.Record, snaps map[uint64]topics.MatcherSnapshot) {
	slot, err := topics.ParseSlotKey(r.Key)
	if err != nil {
		log.Warn("matcher: snapshot key", "offset", r.Offset, "err", err)
		return
	}
	if r.Value == nil {
		delete(snaps, slot)
		return
	}
	env, err := pkafka.DecodeRecord(r)
	var s topics.MatcherSnapshot
	if err == nil {
		s, err = topics.DecodeMatcherSnapshot(env)
	}
	if err != nil || s.Slot != slot {
		log.Warn("matcher: skipping snapshot record", "offset", r.Offset, "slot", slot, "err", err)
		return
	}
	snaps[slot] = s
}
