// Package engine is the matcher's decision core: per slot, both markets'
// books, the positions of the slot and the command ids already seen. Apply
// turns one input envelope into the envelopes to publish.
//
// The engine is a pure function of its inputs: it reads no clock, starts no
// goroutine and never lets map iteration order reach its output, so a replay
// of a partition reproduces every output byte for byte (docs/architecture.md
// "Time is an event").
// Output ids and times derive from the slot's state and the input's time.
package engine

import (
	"fmt"
	"hash/fnv"
	"strconv"

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
	// Value is the envelope encoded, exactly as topics.Encode writes it;
	// Envelope.Data is a part of it. It is never written again, so it can
	// be published as it is.
	Value []byte
}

// Engine holds the state of every slot of one orders partition. It is not
// safe for concurrent use: one goroutine owns a partition.
type Engine struct {
	slots     map[uint64]*slot
	finalized []uint64 // finalized slots, in the order they finalized

	// Per-Apply scratch, reused to keep the hot path allocation-light.
	out    []Output
	events []book.Event
	// arena holds encoded outputs. Bytes handed out in an Output are never
	// written again: a full arena is replaced, not reused.
	arena []byte
	// scratch holds the payload being encoded, so that building one does
	// not allocate.
	scratch struct {
		event topics.OrderEvent
		fill  topics.Fill
		code  int
	}
}

// arenaSize is the size of one block of encoded outputs.
const arenaSize = 64 << 10

// New returns an engine with no slots.
func New() *Engine {
	return &Engine{slots: make(map[uint64]*slot)}
}

// Books returns how many order books the engine holds (one per market
// of a slot not finalized) and how many orders rest in them.
func (e *Engine) Books() (books, resting int) {
	for _, s := range e.slots {
		for _, m := range s.markets {
			if m != nil && m.book != nil {
				books++
				resting += m.book.Len()
			}
		}
	}
	return books, resting
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
	return e.result(in.Type, in.ID, err)
}

// applyPlaceCommand applies a place whose payload is already decoded.
func (e *Engine) applyPlaceCommand(id string, at int64, cmd topics.OrderPlace) ([]Output, error) {
	e.out = e.out[:0]
	return e.result(topics.TypeOrderPlace, id, e.place(input{id, at}, cmd))
}

func (e *Engine) result(typ, id string, err error) ([]Output, error) {
	if err != nil {
		e.out = e.out[:0]
		return nil, fmt.Errorf("apply %s %s: %w", typ, id, err)
	}
	return e.out, nil
}

// input is what outputs take from the command that caused them.
type input struct {
	id   string
	time int64
}

func inputOf(env topics.Envelope) input { return input{env.ID, env.Time} }

// emitter builds the outputs of one input: ids from the slot's counters,
// time from the input.
type emitter struct {
	e    *Engine
	s    *slot
	in   input
	errs error
	// reported is the availablePreconf the input's outputs last carried
	// (a fill or a market.status), when reportedSet.
	reported    int64
	reportedSet bool
}

func (e *Engine) emitterFor(s *slot, in input) *emitter {
	return &emitter{e: e, s: s, in: in}
}

// payload is an output payload that encodes itself (topics' AppendJSON).
type payload interface{ AppendJSON([]byte) []byte }

// event appends an order-events output with the slot's next event id.
// Answers about a slot the engine holds no state for (never opened, or
// evicted) cannot count on the slot; their ids derive from the command id
// instead, so they never collide with the ids the slot once issued.
func (m *emitter) event(typ string, p payload) {
	m.s.nextEvent++
	var buf [64]byte
	id := strconv.AppendUint(append(buf[:0], "oe:"...), m.s.n, 10)
	id = append(id, ':')
	if m.s.transient {
		h := fnv.New64a()
		h.Write([]byte(m.in.id))
		id = fmt.Appendf(id, "c%016x:", h.Sum64())
	}
	id = strconv.AppendUint(id, m.s.nextEvent, 10)
	m.add(topics.OrderEvents, typ, string(id), p)
}

// fill appends a trade.executed output.
func (m *emitter) fill(f *topics.Fill) {
	m.reported, m.reportedSet = f.AvailablePreconf, true
	var buf [32]byte
	id := strconv.AppendInt(append(buf[:0], "fill:"...), f.TradeID, 10)
	m.add(topics.Fills, topics.TypeTradeExecuted, string(id), f)
}

// add encodes the output's envelope into the arena. The type and id are
// the engine's own and obey the envelope's rules, and the payload encoders
// write compact JSON, so nothing is validated again.
func (m *emitter) add(topic, typ, id string, p payload) {
	e := m.e
	if cap(e.arena)-len(e.arena) < 2048 {
		e.arena = make([]byte, 0, arenaSize)
	}
	start := len(e.arena)
	b := topics.AppendEnvelopeHead(e.arena, typ, topics.MatcherEventVersion, id, m.in.time)
	dataAt := len(b)
	b = p.AppendJSON(b)
	dataEnd := len(b)
	b = append(b, '}')
	if cap(b) != cap(e.arena) {
		// An output larger than the arena's room: it got its own array.
		e.arena = e.arena[:0:0]
	} else {
		e.arena = b
	}
	value := b[start:len(b):len(b)]
	env := topics.Envelope{Type: typ, Version: topics.MatcherEventVersion, ID: id, Time: m.in.time, Data: b[dataAt:dataEnd:dataEnd]}
	e.out = append(e.out, Output{Topic: topic, Slot: m.s.n, Envelope: env, Value: value})
}
