package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrFenced means another consumer stored offsets past the ones of this
// batch: the partition moved to another settler instance, and this
// instance's transaction must roll back.
var ErrFenced = errors.New("consumer offsets moved past this batch")

// Offset is the next record to apply of one partition.
type Offset struct {
	Topic     string
	Partition int32
	Next      int64
}

// LoadOffsets returns the stored next offsets of a consumer group.
func LoadOffsets(ctx context.Context, q Querier, group string) (map[string]map[int32]int64, error) {
	rows, err := q.Query(ctx, `SELECT topic, partition, next_offset FROM consumer_offsets WHERE consumer_group = $1`, group)
	if err != nil {
		return nil, fmt.Errorf("load consumer offsets: %w", err)
	}
	out := map[string]map[int32]int64{}
	var topic string
	var part int32
	var next int64
	_, err = pgx.ForEachRow(rows, []any{&topic, &part, &next}, func() error {
		if out[topic] == nil {
			out[topic] = map[int32]int64{}
		}
		out[topic][part] = next
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load consumer offsets: %w", err)
	}
	return out, nil
}

// StoreOffsets records the next offsets in tx, the transaction of the
// entries they cover. An offset never moves back: if a stored offset is
// already at or past the new one, another consumer applied these records
// and StoreOffsets returns ErrFenced.
func StoreOffsets(ctx context.Context, tx pgx.Tx, group string, offsets []Offset) error {
	if len(offsets) == 0 {
		return nil
	}
	topics, parts, nexts := make([]string, len(offsets)), make([]int32, len(offsets)), make([]int64, len(offsets))
	for i, o := range offsets {
		topics[i], parts[i], nexts[i] = o.Topic, o.Partition, o.Next
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO consumer_offsets (consumer_group, topic, partition, next_offset)
		SELECT $1, * FROM unnest($2::text[], $3::int[], $4::bigint[])
		ON CONFLICT (consumer_group, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset
		WHERE consumer_offsets.next_offset < EXCLUDED.next_offset`, group, topics, parts, nexts)
	if err != nil {
		return fmt.Errorf("store consumer offsets: %w", err)
	}
	if tag.RowsAffected() != int64(len(offsets)) {
		return ErrFenced
	}
	return nil
}
