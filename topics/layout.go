package topics

import (
	"errors"
	"fmt"
	"math"
)

// MarketHorizon is how many slots ahead of the current slot a market may
// exist: whole-block markets open up to 64 slots ahead.
const MarketHorizon = 64

// LayoutMargin is added beyond the market horizon when a new epoch starts,
// covering clock skew, commands still in flight and an operator's slightly
// stale idea of the current slot.
const LayoutMargin = 32

// Epoch is a range of slots mapped over a fixed number of partitions. It
// starts at FromSlot and lasts until the next epoch's FromSlot.
type Epoch struct {
	FromSlot   uint64 `json:"fromSlot"`
	Partitions int32  `json:"partitions"`
}

// SlotLayout maps slots to partitions for one family of slot-partitioned
// topics (the topics whose Layout is Topic). The mapping is explicit so that
// raising the partition count never moves a live market: a new count only
// applies from a slot no market exists for yet, and every earlier slot keeps
// the partition it was created on (docs/architecture.md "One writer per
// slot").
//
// Epochs are ordered by FromSlot; the first starts at slot 0.
type SlotLayout struct {
	Topic  string  `json:"topic"`
	Epochs []Epoch `json:"epochs"`
}

// ErrInvalidLayout marks a layout that breaks the rules of Validate.
var ErrInvalidLayout = errors.New("invalid slot layout")

// DefaultLayout is the layout of a slot-partitioned topic family before any
// layout record exists: one epoch of the catalog's partition count.
func DefaultLayout(topic string) (SlotLayout, error) {
	t, ok := Lookup(topic)
	if !ok || t.Partitioning != BySlot || t.Layout != topic {
		return SlotLayout{}, fmt.Errorf("default layout: %q does not own a slot layout", topic)
	}
	return SlotLayout{Topic: topic, Epochs: []Epoch{{FromSlot: 0, Partitions: t.Partitions}}}, nil
}

// Validate checks that every slot maps to exactly one partition and that no
// epoch lowers the partition count.
func (l SlotLayout) Validate() error {
	if l.Topic == "" {
		return fmt.Errorf("%w: missing topic", ErrInvalidLayout)
	}
	if len(l.Epochs) == 0 {
		return fmt.Errorf("%w: %s has no epochs", ErrInvalidLayout, l.Topic)
	}
	if l.Epochs[0].FromSlot != 0 {
		return fmt.Errorf("%w: %s: first epoch starts at slot %d, not 0", ErrInvalidLayout, l.Topic, l.Epochs[0].FromSlot)
	}
	for i, e := range l.Epochs {
		if e.Partitions < 1 {
			return fmt.Errorf("%w: %s: epoch %d has %d partitions", ErrInvalidLayout, l.Topic, i, e.Partitions)
		}
		if i == 0 {
			continue
		}
		prev := l.Epochs[i-1]
		if e.FromSlot <= prev.FromSlot {
			return fmt.Errorf("%w: %s: epoch %d starts at slot %d, not after %d", ErrInvalidLayout, l.Topic, i, e.FromSlot, prev.FromSlot)
		}
		if e.Partitions < prev.Partitions {
			return fmt.Errorf("%w: %s: epoch %d lowers partitions from %d to %d", ErrInvalidLayout, l.Topic, i, prev.Partitions, e.Partitions)
		}
	}
	return nil
}

// Partition returns the partition of slot: slot modulo the partition count
// of the last epoch starting at or before slot. l must be valid.
func (l SlotLayout) Partition(slot uint64) int32 {
	e := l.epochOf(slot)
	return int32(slot % uint64(e.Partitions))
}

func (l SlotLayout) epochOf(slot uint64) Epoch {
	for i := len(l.Epochs) - 1; i > 0; i-- {
		if l.Epochs[i].FromSlot <= slot {
			return l.Epochs[i]
		}
	}
	return l.Epochs[0]
}

// Partitions returns the partition count of the newest epoch, the count the
// topics must have.
func (l SlotLayout) Partitions() int32 {
	if len(l.Epochs) == 0 {
		return 0
	}
	return l.Epochs[len(l.Epochs)-1].Partitions
}

// Raise returns the layout with partitions applying from the first slot that
// cannot have a market yet: currentSlot + MarketHorizon + LayoutMargin.
// Raising to the current count returns the layout unchanged, so retries are
// harmless. If the newest epoch itself starts at or beyond that slot, no
// market uses it yet and its count is replaced instead of adding an epoch.
func (l SlotLayout) Raise(currentSlot uint64, partitions int32) (SlotLayout, error) {
	if err := l.Validate(); err != nil {
		return SlotLayout{}, fmt.Errorf("raise layout: %w", err)
	}
	last := l.Epochs[len(l.Epochs)-1]
	if partitions < last.Partitions {
		return SlotLayout{}, fmt.Errorf("raise layout %s: %d partitions would lower %d", l.Topic, partitions, last.Partitions)
	}
	if currentSlot > math.MaxUint64-MarketHorizon-LayoutMargin {
		return SlotLayout{}, fmt.Errorf("raise layout %s: current slot %d is out of range", l.Topic, currentSlot)
	}
	next := l.clone()
	if partitions == last.Partitions {
		return next, nil
	}
	from := currentSlot + MarketHorizon + LayoutMargin
	if last.FromSlot >= from {
		next.Epochs[len(next.Epochs)-1].Partitions = partitions
		return next, nil
	}
	next.Epochs = append(next.Epochs, Epoch{FromSlot: from, Partitions: partitions})
	return next, nil
}

func (l SlotLayout) clone() SlotLayout {
	return SlotLayout{Topic: l.Topic, Epochs: append([]Epoch(nil), l.Epochs...)}
}
