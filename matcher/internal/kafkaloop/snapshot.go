package kafkaloop

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Snapshots bound the rebuild of a partition (docs/matcher.md
// "Snapshots"). Every Config.SnapshotEvery input records, a partition's
// worker writes the state of every slot its engine holds to the same
// partition of matcher-snapshots, compressed and cut into parts of at most
// snapshotPartBytes (topics.SplitMatcherSnapshot), with the offset of the
// next orders record, in the transaction that commits the outputs and
// offsets up to there. Every key the partition held before and the round
// did not write (a part a slot no longer needs, the parts of a slot the
// engine dropped) gets a tombstone. All records of a round carry the same
// offset, and a round is committed whole or not at all, so the newest
// record of every key is from the last committed round.

// snapshotPartBytes bounds the compressed state in one record: with base64
// and the envelope a record stays under 520 KB, half of what franz-go
// (ProducerBatchMaxBytes, 1,000,012) and Kafka's default max.message.bytes
// (1 MiB) accept, however large a slot grows.
const snapshotPartBytes = 384 << 10

// snapshot writes a round for part, which has applied every record before
// part.next.
func (l *Loop) snapshot(ctx context.Context, part *partition, p int32, produced *producedErr) error {
	at := time.UnixMilli(part.lastTime)
	written := make(map[string]bool)
	for _, n := range part.engine.Slots() {
		state, ok, err := part.engine.SnapshotSlot(n)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		parts, err := topics.SplitMatcherSnapshot(n, part.next, state, l.snapshotPartBytes)
		if err != nil {
			return err
		}
		for _, s := range parts {
			env, err := s.Envelope(at)
			if err != nil {
				return fmt.Errorf("snapshot slot %d: %w", n, err)
			}
			value, err := topics.Encode(env)
			if err != nil {
				return fmt.Errorf("snapshot slot %d: %w", n, err)
			}
			key := topics.MatcherSnapshotKey(n, s.Part)
			l.sess.Produce(ctx, &kgo.Record{Topic: topics.MatcherSnapshots, Partition: p, Key: key, Value: value,
				Headers: recordHeaders(env)}, produced.record)
			written[string(key)] = true
		}
	}
	for key := range part.snapshotted {
		if !written[key] {
			l.sess.Produce(ctx, &kgo.Record{Topic: topics.MatcherSnapshots, Partition: p, Key: []byte(key)}, produced.record)
		}
	}
	part.snapshotted = written
	part.sinceSnapshot = 0
	l.stats.Snapshots.Add(1)
	return nil
}

// storedSnapshots is what one partition of matcher-snapshots holds: the
// newest record of each key.
type storedSnapshots struct {
	// keys are all keys whose newest record is not a tombstone, whether
	// it decodes or not: the next round rewrites or deletes each.
	keys map[string]bool
	// parts are the records that decode, by key.
	parts map[string]topics.MatcherSnapshot
}

func newStoredSnapshots() storedSnapshots {
	return storedSnapshots{keys: make(map[string]bool), parts: make(map[string]topics.MatcherSnapshot)}
}

// round returns the state of every slot of the newest stored round and
// the round's offset, or -1 when the partition holds no snapshot. A slot
// of an older round is one the newest round did not hold, whose
// tombstone an earlier owner of the partition did not know to write: it
// is left out. A slot whose parts do not all hold (one missing, from
// another round, or bytes that do not decompress) is an error: the round
// is not whole.
func (st storedSnapshots) round() (map[uint64][]byte, int64, error) {
	var offset int64 = -1
	for _, s := range st.parts {
		if s.Part == 0 {
			offset = max(offset, s.Offset)
		}
	}
	states := make(map[uint64][]byte)
	for _, first := range st.parts {
		if first.Part != 0 || first.Offset != offset {
			continue
		}
		parts := []topics.MatcherSnapshot{first}
		for i := 1; i < first.Parts; i++ {
			s, ok := st.parts[string(topics.MatcherSnapshotKey(first.Slot, i))]
			if !ok {
				return nil, 0, fmt.Errorf("slot %d: part %d of %d missing", first.Slot, i, first.Parts)
			}
			parts = append(parts, s)
		}
		state, err := topics.JoinMatcherSnapshot(parts)
		if err != nil {
			return nil, 0, err
		}
		states[first.Slot] = state
	}
	return states, offset, nil
}

// restore returns a partition whose engine holds the last committed
// snapshot round stored of p, and whose next record is the round's
// offset; with no round (or one beyond first, which a committed group
// offset cannot be), or one that is not whole, it returns an empty engine
// at offset 0. Either way the next round replaces every stored key.
func (l *Loop) restore(p int32, first int64, stored storedSnapshots) *partition {
	fresh := &partition{engine: engine.New(), snapshotted: stored.keys}
	states, offset, err := stored.round()
	if err != nil {
		l.log.Warn("matcher: snapshot round not whole; reading the partition from its start", "partition", p, "err", err)
		return fresh
	}
	if offset < 0 || offset > first {
		return fresh
	}
	part := &partition{engine: engine.New(), snapshotted: stored.keys, next: offset}
	for n, state := range states {
		if err := part.engine.RestoreSlot(state); err != nil {
			l.log.Warn("matcher: snapshot does not load; reading the partition from its start", "partition", p, "slot", n, "err", err)
			return fresh
		}
	}
	l.stats.SnapshotsLoaded.Add(1)
	return part
}

// readSnapshots reads partitions ps of matcher-snapshots, read_committed,
// up to their last stable offsets, and returns per partition the newest
// record of each key. One client reads them all, so a
// fresh assignment costs one round of requests, not one per partition.
func readSnapshots(ctx context.Context, cfg kafka.Config, log *slog.Logger, ps []int32) (map[int32]storedSnapshots, error) {
	out := make(map[int32]storedSnapshots, len(ps))
	for _, p := range ps {
		out[p] = newStoredSnapshots()
	}
	if len(ps) == 0 {
		return out, nil
	}
	ends, err := snapshotBounds(ctx, cfg, ps)
	if err != nil {
		return nil, err
	}
	if err := readSnapshotsTo(ctx, cfg, log, ends, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readSnapshotsTo reads each partition of ends up to its offset there into
// out, which holds an entry for each.
func readSnapshotsTo(ctx context.Context, cfg kafka.Config, log *slog.Logger, ends map[int32]int64, out map[int32]storedSnapshots) error {
	if len(ends) == 0 {
		return nil
	}
	from := make(map[int32]kgo.Offset, len(ends))
	for p := range ends {
		from[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kafka.NewClient(cfg, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topics.MatcherSnapshots: from}),
		kgo.KeepControlRecords())
	if err != nil {
		return fmt.Errorf("read snapshots: %w", err)
	}
	defer cl.Close()
	for len(ends) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read snapshots: %w", err)
		}
		fetches.EachError(func(_ string, p int32, err error) {
			log.Warn("matcher: read snapshots", "partition", p, "err", err)
		})
		for _, r := range fetches.Records() {
			end, reading := ends[r.Partition]
			if !reading {
				continue
			}
			// The offset below the end may hold an aborted record that
			// is never handed out: its abort marker can come after the
			// first record of a transaction still open when the end was
			// listed (the coordinator writes markers after the commit or
			// abort). Any offset from there on ends the partition.
			if r.Offset >= end-1 {
				delete(ends, r.Partition)
			}
			if r.Offset < end && !r.Attrs.IsControl() {
				applySnapshotRecord(log, r, out[r.Partition])
			}
		}
	}
	return nil
}

// snapshotBounds returns the last stable offset of each partition of ps
// that holds records below it.
func snapshotBounds(ctx context.Context, cfg kafka.Config, ps []int32) (map[int32]int64, error) {
	cl, err := kafka.NewClient(cfg)
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

func applySnapshotRecord(log *slog.Logger, r *kgo.Record, stored storedSnapshots) {
	key := string(r.Key)
	delete(stored.parts, key)
	if r.Value == nil {
		delete(stored.keys, key)
		return
	}
	stored.keys[key] = true
	env, err := kafka.DecodeRecord(r)
	var s topics.MatcherSnapshot
	if err == nil {
		s, err = topics.DecodeMatcherSnapshot(env)
	}
	if err == nil && key != string(topics.MatcherSnapshotKey(s.Slot, s.Part)) {
		err = fmt.Errorf("part %d of slot %d under another key", s.Part, s.Slot)
	}
	if err != nil {
		log.Warn("matcher: skipping snapshot record", "offset", r.Offset, "key", key, "err", err)
		return
	}
	stored.parts[key] = s
}
