package topics

import (
	"fmt"
	"time"
)

// SlotLayoutVersion is the payload version of layout records.
const SlotLayoutVersion = 1

// LayoutKey is the record key of a layout on SlotLayouts: the layout's name,
// so compaction keeps the newest layout of each topic family.
func LayoutKey(topic string) []byte { return []byte(topic) }

// LayoutEnvelope wraps a valid layout as the value of a SlotLayouts record.
// The id is derived from the layout, so publishing the same layout twice
// yields the same id.
func LayoutEnvelope(l SlotLayout, at time.Time) (Envelope, error) {
	if err := l.Validate(); err != nil {
		return Envelope{}, fmt.Errorf("layout envelope: %w", err)
	}
	last := l.Epochs[len(l.Epochs)-1]
	id := fmt.Sprintf("layout:%s:%d:%d:%d", l.Topic, len(l.Epochs), last.FromSlot, last.Partitions)
	e, err := NewEnvelope(TypeSlotLayout, SlotLayoutVersion, id, at, l)
	if err != nil {
		return Envelope{}, fmt.Errorf("layout envelope: %w", err)
	}
	return e, nil
}

// DecodeLayout returns the layout carried by a SlotLayouts envelope and
// checks it is valid.
func DecodeLayout(e Envelope) (SlotLayout, error) {
	if e.Type != TypeSlotLayout {
		return SlotLayout{}, fmt.Errorf("decode layout: envelope type is %q, not %q", e.Type, TypeSlotLayout)
	}
	if e.Version != SlotLayoutVersion {
		return SlotLayout{}, fmt.Errorf("decode layout: unknown version %d", e.Version)
	}
	var l SlotLayout
	if err := e.UnmarshalData(&l); err != nil {
		return SlotLayout{}, fmt.Errorf("decode layout: %w", err)
	}
	if err := l.Validate(); err != nil {
		return SlotLayout{}, fmt.Errorf("decode layout: %w", err)
	}
	return l, nil
}
