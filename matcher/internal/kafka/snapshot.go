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
// snapshot round of p, and whose next record is the round's offset; with
// no round (or one beyond first, which a committed group offset cannot
// be), it returns an empty engine at offset 0.
func (l *Loop) restore(ctx context.Context, p int32, first int64) (*partition, error) {
	snaps, err := readSnapshots(ctx, l.cfg.Kafka, l.log, p)
	if err != nil {
		return nil, err
	}
	part := &partition{engine: engine.New()}
	var offset int64 = -1
	for _, s := range snaps {
		if offset >= 0 && s.Offset != offset {
			l.log.Warn("matcher: snapshots of one partition disagree on their offset; reading the partition from its start",
				"partition", p, "offsets", []int64{offset, s.Offset})
			return &partition{engine: engine.New()}, nil
		}
		offset = s.Offset
	}
	if offset < 0 || offset > first {
		return part, nil
	}
	part.snapshotted = make(map[uint64]bool)
	for n, s := range snaps {
		if err := part.engine.RestoreSlot(s.State); err != nil {
			l.log.Warn("matcher: snapshot does not load; reading the partition from its start", "partition", p, "slot", n, "err", err)
			return &partition{engine: engine.New()}, nil
		}
		part.snapshotted[n] = true
	}
	part.next = offset
	l.stats.SnapshotsLoaded.Add(1)
	return part, nil
}

// readSnapshots reads partition p of matcher-snapshots, read_committed, up
// to its last stable offset and returns the newest snapshot of each slot
// that has one.
func readSnapshots(ctx context.Context, cfg pkafka.Config, log *slog.Logger, p int32) (map[uint64]topics.MatcherSnapshot, error) {
	cl, err := pkafka.NewClient(cfg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topics.MatcherSnapshots: {p: kgo.NewOffset().AtStart()},
	}), kgo.KeepControlRecords())
	if err != nil {
		return nil, fmt.Errorf("read snapshots of partition %d: %w", p, err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics.MatcherSnapshots)
	if err != nil {
		return nil, fmt.Errorf("read snapshots of partition %d: end offset: %w", p, err)
	}
	end, ok := ends.Lookup(topics.MatcherSnapshots, p)
	if !ok || end.Err != nil {
		return nil, fmt.Errorf("read snapshots of partition %d: no end offset (%v)", p, end.Err)
	}
	snaps := make(map[uint64]topics.MatcherSnapshot)
	for last := int64(-1); last < end.Offset-1; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read snapshots of partition %d: %w", p, err)
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			log.Warn("matcher: read snapshots", "partition", p, "err", err)
		})
		for _, r := range fetches.Records() {
			last = r.Offset
			if r.Attrs.IsControl() || r.Offset >= end.Offset {
				continue
			}
			applySnapshotRecord(log, r, snaps)
		}
	}
	return snaps, nil
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
