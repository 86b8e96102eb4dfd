package clock

import (
	"sort"
	"time"

	"blockspace.exchange/platform/environment"
	"blockspace.exchange/topics"
)

// event is one thing the clock publishes: a market open (family set) or a
// tick (tick set) of slot, due at at.
type event struct {
	at     time.Time
	slot   uint64
	family topics.Family
	tick   topics.TickKind
	order  int // tie-break between events due at the same instant
}

func (e event) less(o event) bool {
	if !e.at.Equal(o.at) {
		return e.at.Before(o.at)
	}
	if e.slot != o.slot {
		return e.slot < o.slot
	}
	return e.order < o.order
}

// slotEvents returns the five events of slot.
func (c *Clock) slotEvents(slot uint64) [5]event {
	env := c.cfg.Env
	t := env.Times(slot)
	ahead := func(n int64) time.Time { return t.Block.Add(-time.Duration(n) * env.SlotLength) }
	return [5]event{
		{at: ahead(WholeBlockHorizon), slot: slot, family: topics.WholeBlock, order: 0},
		{at: ahead(PreconfHorizon), slot: slot, family: topics.InclusionPreconf, order: 1},
		{at: t.Maturity, slot: slot, tick: topics.TickTradingClosed, order: 2},
		{at: t.TrxSubmit, slot: slot, tick: topics.TickSubmissionClosed, order: 3},
		{at: t.Finality, slot: slot, tick: topics.TickFinalized, order: 4},
	}
}

// events returns the events due in (from, to], sorted by time.
func (c *Clock) events(from, to time.Time) []event {
	lo, hi := c.slotRange(from, to)
	var out []event
	for s := lo; s <= hi; s++ {
		for _, ev := range c.slotEvents(s) {
			if ev.at.After(from) && !ev.at.After(to) {
				out = append(out, ev)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out
}

// slotRange bounds the slots that can have an event in (from, to]: events
// lie from 64 slots before a slot's block to FinalitySlots after it.
func (c *Clock) slotRange(from, to time.Time) (lo, hi uint64) {
	env := c.cfg.Env
	idx := func(t time.Time) int64 { return int64(t.Sub(env.Genesis) / env.SlotLength) }
	l := idx(from) - environment.FinalitySlots - 1
	h := idx(to) + WholeBlockHorizon + 1
	if l < 0 {
		l = 0
	}
	if h < 0 {
		return 1, 0
	}
	return uint64(l), uint64(h)
}

// nextAfter returns when the first event after t is due. Every slot length
// holds one event of each kind, so the next one is at most a slot away.
func (c *Clock) nextAfter(t time.Time) time.Time {
	evs := c.events(t, t.Add(c.cfg.Env.SlotLength))
	if len(evs) == 0 {
		return t.Add(c.cfg.Env.SlotLength)
	}
	return evs[0].at
}
