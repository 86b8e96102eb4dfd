package topics

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MatcherSnapshotVersion is the payload version of matcher.snapshot.
const MatcherSnapshotVersion = 2

// MatcherSnapshot is the payload of a TypeMatcherSnapshot record on
// MatcherSnapshots: one part of the matcher's state of one slot after it
// applied every orders record of the slot's partition before Offset.
//
// A slot's state is gzip-compressed and cut into Parts parts, so that no
// record comes near a broker's or a client's record size limit however
// many orders the slot holds. Part 0 is keyed by the slot (SlotKey) and
// says how many parts there are; part i > 0 is keyed "<slot>/<i>"
// (MatcherSnapshotKey). The matcher writes all parts of every slot it
// holds, all with the same Offset, in the transaction that commits the
// outputs and consumer offsets up to Offset, and a tombstone (null value)
// for every other key it wrote before: a part the state no longer needs,
// or every part of a slot it no longer holds. A matcher that takes over
// the partition loads the newest record of each key and applies the
// partition from Offset on, instead of from its start.
type MatcherSnapshot struct {
	Slot uint64 `json:"slot"`
	// Offset is the orders offset of the first record the state does not
	// reflect, on the partition of the slot.
	Offset int64 `json:"offset"`
	// Part is this part's index, from 0; Parts is how many there are.
	Part  int `json:"part"`
	Parts int `json:"parts"`
	// State is this part's bytes of the gzip-compressed state (base64 in
	// JSON). The parts' bytes in order are one gzip stream of the
	// matcher's state of the slot as JSON (docs/matcher.md "Snapshots");
	// only the matcher reads it.
	State []byte `json:"state"`
}

// MatcherSnapshotKey is the record key of part of a slot's snapshot: the
// slot for part 0, "<slot>/<part>" for the others.
func MatcherSnapshotKey(slot uint64, part int) []byte {
	k := SlotKey(slot)
	if part == 0 {
		return k
	}
	return strconv.AppendInt(append(k, '/'), int64(part), 10)
}

// ID is the envelope id of the part: snapshot:<slot>:<offset>, with
// :<part> after it for parts after the first.
func (s MatcherSnapshot) ID() string {
	id := "snapshot:" + strconv.FormatUint(s.Slot, 10) + ":" + strconv.FormatInt(s.Offset, 10)
	if s.Part > 0 {
		id += ":" + strconv.Itoa(s.Part)
	}
	return id
}

// Envelope wraps the part; at is the time of the last input it reflects.
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
	if s.Offset < 0 || s.Parts < 1 || s.Part < 0 || s.Part >= s.Parts || len(s.State) == 0 {
		return MatcherSnapshot{}, fmt.Errorf("decode %s: offset %d, part %d of %d or state missing", e.Type, s.Offset, s.Part, s.Parts)
	}
	return s, nil
}

// SplitMatcherSnapshot compresses state and cuts it into the parts of a
// snapshot of slot at offset, each holding at most partBytes compressed
// bytes (base64 makes that a third more in the record).
func SplitMatcherSnapshot(slot uint64, offset int64, state []byte, partBytes int) ([]MatcherSnapshot, error) {
	if partBytes <= 0 {
		return nil, fmt.Errorf("split snapshot of slot %d: part size %d is not positive", slot, partBytes)
	}
	var buf bytes.Buffer
	// The fastest level: it still shrinks the state's JSON several times
	// over and costs a fraction of building it.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err == nil {
		_, err = zw.Write(state)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("split snapshot of slot %d: compress: %w", slot, err)
	}
	z := buf.Bytes()
	n := (len(z) + partBytes - 1) / partBytes
	parts := make([]MatcherSnapshot, n)
	for i := range parts {
		parts[i] = MatcherSnapshot{Slot: slot, Offset: offset, Part: i, Parts: n, State: z[i*partBytes : min((i+1)*partBytes, len(z))]}
	}
	return parts, nil
}

// JoinMatcherSnapshot returns the state that parts, all the parts of one
// snapshot in order, were split from. Parts of different snapshots, a
// missing part, or bytes that do not decompress whole are an error.
func JoinMatcherSnapshot(parts []MatcherSnapshot) ([]byte, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("join snapshot: no parts")
	}
	first := parts[0]
	var z []byte
	for i, p := range parts {
		if p.Slot != first.Slot || p.Offset != first.Offset || p.Parts != len(parts) || p.Part != i {
			return nil, fmt.Errorf("join snapshot of slot %d at %d: part %d is part %d of %d of slot %d at %d",
				first.Slot, first.Offset, i, p.Part, p.Parts, p.Slot, p.Offset)
		}
		z = append(z, p.State...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("join snapshot of slot %d at %d: %w", first.Slot, first.Offset, err)
	}
	state, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("join snapshot of slot %d at %d: %w", first.Slot, first.Offset, err)
	}
	return state, nil
}
