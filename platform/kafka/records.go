package kafka

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// NewRecord returns the record of an envelope on a key-hashed topic.
func NewRecord(topic string, key []byte, e topics.Envelope) (*kgo.Record, error) {
	t, ok := topics.Lookup(topic)
	if !ok {
		return nil, fmt.Errorf("new record: unknown topic %q", topic)
	}
	if t.Partitioning == topics.BySlot {
		return nil, fmt.Errorf("new record: %s is slot-partitioned; use NewSlotRecord", topic)
	}
	return envelopeRecord(topic, key, e)
}

// NewSlotRecord returns the record of an envelope about slot on a
// slot-partitioned topic: key is the slot, partition comes from layout.
// layout must be the current layout of the topic's family
// (docs/architecture.md "One writer per slot").
func NewSlotRecord(topic string, layout topics.SlotLayout, slot uint64, e topics.Envelope) (*kgo.Record, error) {
	t, ok := topics.Lookup(topic)
	if !ok || t.Partitioning != topics.BySlot {
		return nil, fmt.Errorf("new slot record: %q is not a slot-partitioned topic", topic)
	}
	if layout.Topic != t.Layout {
		return nil, fmt.Errorf("new slot record: %s follows layout %q, not %q", topic, t.Layout, layout.Topic)
	}
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("new slot record: %w", err)
	}
	r, err := envelopeRecord(topic, topics.SlotKey(slot), e)
	if err != nil {
		return nil, err
	}
	r.Partition = layout.Partition(slot)
	return r, nil
}

func envelopeRecord(topic string, key []byte, e topics.Envelope) (*kgo.Record, error) {
	value, err := topics.Encode(e)
	if err != nil {
		return nil, fmt.Errorf("record for %s: %w", topic, err)
	}
	r := &kgo.Record{Topic: topic, Key: key, Value: value}
	for _, h := range e.Headers() {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r, nil
}

// DecodeRecord returns the envelope in a record's value.
func DecodeRecord(r *kgo.Record) (topics.Envelope, error) {
	e, err := topics.Decode(r.Value)
	if err != nil {
		return topics.Envelope{}, fmt.Errorf("%s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return e, nil
}

// RecordType reads the type and version headers, so a consumer can skip a
// record without decoding its value. ok is false when either is missing.
func RecordType(r *kgo.Record) (typ string, version int, ok bool) {
	var haveType, haveVersion bool
	for _, h := range r.Headers {
		switch h.Key {
		case topics.HeaderType:
			typ, haveType = string(h.Value), true
		case topics.HeaderVersion:
			v, err := strconv.Atoi(string(h.Value))
			version, haveVersion = v, err == nil
		}
	}
	return typ, version, haveType && haveVersion
}
