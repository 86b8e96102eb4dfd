package kafkaloop

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/topics"
)

// outputRecord fills r with an engine output. It goes to the partition of
// the input record: order-events and fills follow the layout of orders, so
// the input's partition is the slot's partition in every topic of the
// family, without reading the layout a second time.
func (part *partition) outputRecord(r *kgo.Record, o engine.Output, partition int32) {
	r.Topic, r.Partition, r.Value = o.Topic, partition, o.Value
	r.Key = part.key(o.Slot)
	r.Headers = headers(o.Envelope.Type)
}

// key returns the record key of a slot. Keys are shared by the records of
// a slot; nothing writes to them after they are made.
func (part *partition) key(slot uint64) []byte {
	if k, ok := part.keys[slot]; ok {
		return k
	}
	if part.keys == nil || len(part.keys) > 1024 {
		part.keys = make(map[uint64][]byte)
	}
	k := topics.SlotKey(slot)
	part.keys[slot] = k
	return k
}

// outputHeaders are the headers of each output type, shared by every
// record of the type: records never change their headers.
var outputHeaders = func() map[string][]kgo.RecordHeader {
	m := make(map[string][]kgo.RecordHeader)
	for _, t := range []string{topics.TypeOrderAccepted, topics.TypeOrderRejected, topics.TypeOrderCancelled, topics.TypeOrderExpired,
		topics.TypeOrderFilled, topics.TypeCancelRejected, topics.TypeMarketStatus, topics.TypeTradeExecuted} {
		m[t] = recordHeaders(topics.Envelope{Type: t, Version: topics.MatcherEventVersion})
	}
	return m
}()

func headers(typ string) []kgo.RecordHeader {
	if h, ok := outputHeaders[typ]; ok {
		return h
	}
	return recordHeaders(topics.Envelope{Type: typ, Version: topics.MatcherEventVersion})
}

func recordHeaders(e topics.Envelope) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	for _, h := range e.Headers() {
		hs = append(hs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return hs
}
