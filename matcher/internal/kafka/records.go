package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/topics"
)

// outputRecord returns the record of an engine output. It goes to the
// partition of the input record: order-events and fills follow the layout
// of orders, so the input's partition is the slot's partition in every
// topic of the family, without reading the layout a second time.
func outputRecord(o engine.Output, partition int32) (*kgo.Record, error) {
	value, err := topics.Encode(o.Envelope)
	if err != nil {
		return nil, fmt.Errorf("output record: %w", err)
	}
	r := &kgo.Record{Topic: o.Topic, Key: topics.SlotKey(o.Slot), Value: value, Partition: partition}
	for _, h := range o.Envelope.Headers() {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r, nil
}
