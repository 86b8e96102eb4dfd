// Package engine is the matcher's decision core: per slot, both markets'
// books, the positions of the slot and the command ids already seen. Apply
// turns one input envelope into the envelopes to publish.
//
// The engine is a pure function of its inputs: it reads no clock, starts no
// goroutine and never lets map iteration order reach its output, so a replay
// of a partition reproduces every output byte for byte (DESIGN rule 2).
// Output ids and times derive from the slot's state and the input's time.
package engine

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"blockspace.exchange/matcher/internal/book"
	"blockspace.exchange/topics"
)

// RetainSlots is how many slots a finalized slot's command ids are kept
// after a later slot finalizes, so that a command republished late by the
// outbox is still dropped as a duplicate. 64 slots are about 13 minutes on
// mainnet, far beyond the outbox's retry horizon.
const RetainSlots = 64

// Output is one envelope to publish: on Topic (OrderEvents or Fills), keyed
// by Slot, on the partition of the input.
type Output struct {
	Topic    string
	Slot     uint64
	Envelope topics.Envelope
}

// Engine holds the state of every slot of one orders partition. It is not
// safe for concurrent use: one goroutine owns a partition.
type Engine struct {
	slots     map[uint64]*slot
	finalized []uint64 // finalized slots, in the order they finalized

	// Per-Apply scratch, reused to keep the hot path allocation-light.
	out    []Output
	events []book.Event
}

// New returns an engine with no slots.
func New() *Engine {
	return &Engine{slots: make(map[uint64]*slot)}
}

// Apply processes one input and returns its outputs, in publishing order.
// The returned slice is valid until the next call.
//
// An error means the input cannot be interpreted (an undecodable payload,
// an instrument id without a slot, market parameters that do not hold); it
// produced no output and changed no state, and replaying it fails the same
// way, so the caller logs it and moves on. Types the matcher does not
// consume are ignored without error.
func (e *Engine) Apply(in topics.Envelope) ([]Output, error) {
	e.out = e.out[:0]
	var err error
	switch in.Type {
	case topics.TypeOrderPlace:
		err = e.applyPlace(in)
	case topics.TypeOrderCancel:
		err = e.applyCancel(in)
	case topics.TypeOrderCancelBatch:
		err = e.applyCancelBatch(in)
	case topics.TypeOrderCancelAll:
		err = e.applyCancelAll(in)
	case topics.TypeMarketOpen:
		err = e.applyMarketOpen(in)
	case topics.TypeClockTick:
		err = e.applyTick(in)
	}
	if err != nil {
		e.out = e.out[:0]
		return nil, fmt.Errorf("apply %s %s: %w", in.Type, in.ID, err)
	}
	return e.out, nil
}

// emitter builds the outputs of one input: ids from the slot's counters,
// time from the input.
type emitter struct {
	e    *Engine
	s    *slot
	in   topics.Envelope
	errs error
}

func (e *Engine) emitterFor(s *slot, in topics.Envelope) *emitter {
	return &emitter{e: e, s: s, in: in}
}

// event appends an order-events output with the slot's next event id.
// Answers about a slot the engine holds no state for (never opened, or
// evicted) cannot count on the slot; their ids derive from the command id
// instead, so they never collide with the ids the slot once issued.
func (m *emitter) event(typ string, payload any) {
	m.s.nextEvent++
	id := fmt.Sprintf("oe:%d:%d", m.s.n, m.s.nextEvent)
	if m.s.transient {
		h := fnv.New64a()
		h.Write([]byte(m.in.ID))
		id = fmt.Sprintf("oe:%d:c%016x:%d", m.s.n, h.Sum64(), m.s.nextEvent)
	}
	m.add(topics.OrderEvents, typ, id, payload)
}

// fill appends a trade.executed output.
func (m *emitter) fill(f topics.Fill) {
	m.add(topics.Fills, topics.TypeTradeExecuted, fmt.Sprintf("fill:%d", f.TradeID), f)
}

// add marshals payload into an envelope. It skips NewEnvelope's
// validation: the type and id are the engine's own and the data is a
// marshalled struct, and Encode validates once more before publishing.
func (m *emitter) add(topic, typ, id string, payload any) {
	data, err := json.Marshal(payload)
	env := topics.Envelope{Type: typ, Version: topics.MatcherEventVersion, ID: id, Time: m.in.Time, Data: data}
	if err != nil {
		// Payloads are the engine's own structs; failing to encode one is
		// a bug, reported rather than published half-done.
		if m.errs == nil {
			m.errs = err
		}
		return
	}
	m.e.out = append(m.e.out, Output{Topic: topic, Slot: m.s.n, Envelope: env})
}
