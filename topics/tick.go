package topics

import (
	"fmt"
	"strconv"
	"time"
)

// ClockTickVersion is the payload version of clock ticks.
const ClockTickVersion = 1

// TickKind is the point of a slot's market time that a tick announces.
type TickKind string

// The ticks of a slot, in the order the clock publishes them. Each moves the
// slot's markets to the status of the same name (docs/api.md "Values and
// identifiers").
const (
	// TickMarketOpen opens the slot's markets (status 1), up to 64 slots ahead.
	TickMarketOpen TickKind = "market_open"
	// TickTradingClosed is maturityTime: open orders expire (status 2).
	TickTradingClosed TickKind = "trading_closed"
	// TickSubmissionClosed is trxSubmitTime: no more transactions (status 3).
	TickSubmissionClosed TickKind = "submission_closed"
	// TickFinalized is finalityTime: the slot is final (status 4).
	TickFinalized TickKind = "finalized"
)

// Valid reports whether k is one of the four tick kinds.
func (k TickKind) Valid() bool {
	switch k {
	case TickMarketOpen, TickTradingClosed, TickSubmissionClosed, TickFinalized:
		return true
	}
	return false
}

// ClockTick is the payload of a TypeClockTick message. Time is an event
// (docs/architecture.md "Time is an event"): the matcher learns that a
// slot's market opened or closed
// only from these records, never from its own clock, so replaying a
// partition gives the same result.
type ClockTick struct {
	Slot uint64   `json:"slot"`
	Kind TickKind `json:"kind"`
}

// ID is the tick's envelope id. It depends only on slot and kind, so a clock
// that publishes a tick twice (after a restart, or two clocks in a failover)
// produces duplicates that the matcher drops.
func (t ClockTick) ID() string {
	return "tick:" + strconv.FormatUint(t.Slot, 10) + ":" + string(t.Kind)
}

// Envelope wraps the tick; at is the tick's scheduled instant (for example
// the slot's maturityTime), not the moment it is published.
func (t ClockTick) Envelope(at time.Time) (Envelope, error) {
	if !t.Kind.Valid() {
		return Envelope{}, fmt.Errorf("clock tick envelope: unknown kind %q", t.Kind)
	}
	return NewEnvelope(TypeClockTick, ClockTickVersion, t.ID(), at, t)
}

// DecodeClockTick returns the tick carried by a TypeClockTick envelope.
func DecodeClockTick(e Envelope) (ClockTick, error) {
	if e.Type != TypeClockTick {
		return ClockTick{}, fmt.Errorf("decode clock tick: envelope type is %q, not %q", e.Type, TypeClockTick)
	}
	if e.Version != ClockTickVersion {
		return ClockTick{}, fmt.Errorf("decode clock tick: unknown version %d", e.Version)
	}
	// Slot is a pointer here so that a missing slot is an error rather
	// than slot 0.
	var wire struct {
		Slot *uint64  `json:"slot"`
		Kind TickKind `json:"kind"`
	}
	if err := e.UnmarshalData(&wire); err != nil {
		return ClockTick{}, fmt.Errorf("decode clock tick: %w", err)
	}
	if wire.Slot == nil {
		return ClockTick{}, fmt.Errorf("decode clock tick: missing slot")
	}
	if !wire.Kind.Valid() {
		return ClockTick{}, fmt.Errorf("decode clock tick: unknown kind %q", wire.Kind)
	}
	return ClockTick{Slot: *wire.Slot, Kind: wire.Kind}, nil
}
