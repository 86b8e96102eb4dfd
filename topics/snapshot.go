package topics

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// MatcherSnapshotVersion is the payload version of matcher.snapshot.
const MatcherSnapshotVersion = 1

// MatcherSnapshot is the payload of a TypeMatcherSnapshot record on
// MatcherSnapshots, keyed by slot: the matcher's whole state of one slot
// after it applied every orders record of the slot's partition before
// Offset. The matcher writes one for every slot it holds, all with the same
// Offset, in the transaction that commits the outputs and consumer offsets
// up to Offset, and a tombstone (null value) for a slot it no longer
// holds. A matcher that takes over the partition loads the newest record
// of each slot and applies the partition from Offset on, instead of from
// its start.
type MatcherSnapshot struct {
	Slot uint64 `json:"slot"`
	// Offset is the orders offset of the first record the state does not
	// reflect, on the partition of the slot.
	Offset int64 `json:"offset"`
	// State is the matcher's state of the slot (docs/matcher.md
	// "Snapshots"); only the matcher reads it.
	State json.RawMessage `json:"state"`
}

// ID is the envelope id of the snapshot: snapshot:<slot>:<offset>.
func (s MatcherSnapshot) ID() string {
	return "snapshot:" + strconv.FormatUint(s.Slot, 10) + ":" + strconv.FormatInt(s.Offset, 10)
}

// Envelope wraps the snapshot; at is the time of the last input it
// reflects.
func (s MatcherSnapshot) Envelope(at time.Time) (Envelope, error) {
	return NewEnvelope(TypeMatcherSnapshot, MatcherSnapshotVersion, s.ID(), at, s)
}

// DecodeMatcherSnapshot returns the payload of a TypeMatcherSnapshot
// envelope.
func DecodeMatcherSnapshot(e Envelope) (MatcherSnapshot, error) {
	var s MatcherSnapshot
	if err := decodeVersioned(e, TypeMatcherSnapshot, MatcherSnapshotVersion, &s); err != nil {
		return MatcherSnapshot{}, err
	}
	if s.Offset < 0 || len(s.State) == 0 || s.State[0] != '{' {
		return MatcherSnapshot{}, fmt.Errorf("decode %s: offset %d or state missing", e.Type, s.Offset)
	}
	return s, nil
}
