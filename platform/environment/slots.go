package environment

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// SlotsPerEpoch is the beacon chain's epoch length in slots.
const SlotsPerEpoch = 32

// FinalitySlots is how long after its block a slot is final: two epochs
// (768 s with 12 s slots).
const FinalitySlots = 2 * SlotsPerEpoch

// MinSlotLength is the shortest slot length the clock accepts; shorter
// slots leave the market no time between maturity and block.
const MinSlotLength = 60 * time.Millisecond

// SlotTimes are the time points of one slot's markets (docs/markets.md
// "Slot time"). With 12 s slots they are block −4 s, block −2 s,
// block and block +768 s; other slot lengths scale them (maturity at a
// third of a slot before the block, submission at a sixth, finality two
// epochs after), so an accelerated dev chain keeps the same shape.
type SlotTimes struct {
	Maturity  time.Time // trading closes: status 2
	TrxSubmit time.Time // transaction submission closes: status 3
	Block     time.Time // the slot's block starts
	Finality  time.Time // the slot is final: status 4
}

// ValidateClock reports why the environment cannot drive a slot clock.
func (e Environment) ValidateClock() error {
	if e.Genesis.IsZero() {
		return errors.New("slot clock: genesis is not set")
	}
	if e.SlotLength < MinSlotLength {
		return fmt.Errorf("slot clock: slot length %s is below %s", e.SlotLength, MinSlotLength)
	}
	return nil
}

// BlockTime returns the start of slot's block.
func (e Environment) BlockTime(slot uint64) time.Time {
	return e.Genesis.Add(time.Duration(slot) * e.SlotLength)
}

// Times returns the time points of slot.
func (e Environment) Times(slot uint64) SlotTimes {
	block := e.BlockTime(slot)
	return SlotTimes{
		Maturity:  block.Add(-e.SlotLength / 3),
		TrxSubmit: block.Add(-e.SlotLength / 6),
		Block:     block,
		Finality:  block.Add(FinalitySlots * e.SlotLength),
	}
}

// SlotAt returns the slot whose block started last at or before t; ok is
// false before genesis.
func (e Environment) SlotAt(t time.Time) (slot uint64, ok bool) {
	if t.Before(e.Genesis) || e.SlotLength <= 0 {
		return 0, false
	}
	return uint64(t.Sub(e.Genesis) / e.SlotLength), true
}

// WithDevClock returns the environment with the given genesis and slot
// length; zero values keep the current ones.
func (e Environment) WithDevClock(genesis time.Time, slotLength time.Duration) Environment {
	if !genesis.IsZero() {
		e.Genesis = genesis
	}
	if slotLength > 0 {
		e.SlotLength = slotLength
	}
	return e
}

// ParseGenesis reads a dev chain's genesis written as RFC 3339
// (2026-01-02T15:04:05Z) or as UNIX seconds.
func ParseGenesis(raw string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, raw); err == nil {
		return t, nil
	}
	if sec, err := strconv.ParseInt(raw, 10, 64); err == nil && sec > 0 {
		return time.Unix(sec, 0), nil
	}
	return time.Time{}, fmt.Errorf("genesis %q: want RFC 3339 (2026-01-02T15:04:05Z) or UNIX seconds", raw)
}
