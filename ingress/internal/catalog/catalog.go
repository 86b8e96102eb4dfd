// Package catalog is what ingress knows about the markets: each live
// market's parameters, fee rates, seller and status, learnt from the log
// like every other reader (the market.open commands of `orders` and the
// matcher's market.status events of `order-events`). Order entry checks
// orders against it before anything is reserved.
package catalog

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// Market is one market as the catalog knows it: its parameters, derived
// from its market.open as every reader derives them (platform/market),
// and the status the matcher last reported.
type Market struct {
	market.Params
	// Status is the last market.status the matcher reported, 0 before
	// the first one.
	Status int
}

// Open reports whether orders may be placed at now: the matcher has not
// reported trading closed and the market's maturity has not passed.
func (m *Market) Open(now time.Time) bool {
	if m.Status >= topics.MarketStatusTradingClosed {
		return false
	}
	return m.OpenAt(now)
}

// Catalog holds the live markets by instrument id. One feed goroutine
// applies records; request goroutines read. A RWMutex guards the maps;
// the *Market values are never changed after they are stored (Apply
// replaces them), so a reader may keep one without the lock.
//
// market.open and market.status come from two topics, so a status can be
// read before its market's open: such statuses wait in early until the
// open arrives. A finalized market is dropped from markets and its status
// stays in early, so that a late duplicate of its open does not bring it
// back; early is pruned to the slots near the newest one.
type Catalog struct {
	mu       sync.RWMutex
	markets  map[string]*Market
	early    map[string]earlyStatus
	lastSlot uint64 // the highest slot seen
	ready    atomic.Bool
}

type earlyStatus struct {
	slot   uint64
	status int
}

// keepEarly bounds early: statuses of slots more than keepEarly slots
// below the newest are forgotten once early holds that many.
const keepEarly = 4096

// New returns an empty catalog that is not ready yet.
func New() *Catalog {
	return &Catalog{markets: make(map[string]*Market), early: make(map[string]earlyStatus)}
}

// ErrCatchingUp is Err's answer until the feed has read the log up to
// where it stood at start.
var ErrCatchingUp = errors.New("market catalog is still reading the log")

// Err reports whether the catalog can answer: nil once it caught up.
func (c *Catalog) Err() error {
	if !c.ready.Load() {
		return ErrCatchingUp
	}
	return nil
}

// SetReady marks the catalog as caught up.
func (c *Catalog) SetReady() { c.ready.Store(true) }

// Lookup returns the market of an instrument id, nil when unknown.
func (c *Catalog) Lookup(instrument string) *Market {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.markets[instrument]
}

// Family returns the markets of a family.
func (c *Catalog) Family(f topics.Family) []*Market {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Market
	for _, m := range c.markets {
		if m.Family == f {
			out = append(out, m)
		}
	}
	return out
}

// Apply folds one record into the catalog: a market.open adds its market,
// a market.status moves it, and a finalized market is forgotten. Other
// types are ignored. A market.open whose parameters do not hold is
// refused with an error, as the matcher leaves such a market closed.
func (c *Catalog) Apply(e topics.Envelope) error {
	switch e.Type {
	case topics.TypeMarketOpen:
		open, err := topics.DecodeMarketOpen(e)
		if err != nil {
			return err
		}
		return c.open(open)
	case topics.TypeMarketStatus:
		var st topics.MarketStatus
		if err := e.UnmarshalData(&st); err != nil {
			return err
		}
		c.status(st)
	}
	return nil
}

func (c *Catalog) open(o topics.MarketOpen) error {
	params, err := market.New(o)
	instrument := topics.InstrumentID(o.Family, o.Slot)
	if err != nil {
		return fmt.Errorf("market %s: %w", instrument, err)
	}
	m := &Market{Params: params}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSlot = max(c.lastSlot, o.Slot)
	if old := c.markets[instrument]; old != nil {
		// A republished market.open changes nothing the matcher uses:
		// the first one of a market counts.
		return nil
	}
	if e, ok := c.early[instrument]; ok {
		if e.status >= topics.MarketStatusFinalized {
			return nil
		}
		m.Status = e.status
		delete(c.early, instrument)
	}
	c.markets[instrument] = m
	return nil
}

func (c *Catalog) status(st topics.MarketStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSlot = max(c.lastSlot, st.Slot)
	old := c.markets[st.InstrumentID]
	if old == nil || st.Status >= topics.MarketStatusFinalized {
		delete(c.markets, st.InstrumentID)
		if e, ok := c.early[st.InstrumentID]; !ok || st.Status > e.status {
			c.early[st.InstrumentID] = earlyStatus{slot: st.Slot, status: st.Status}
		}
		c.pruneEarly()
		return
	}
	if st.Status <= old.Status {
		return
	}
	m := *old
	m.Status = st.Status
	c.markets[st.InstrumentID] = &m
}

// pruneEarly forgets statuses of slots far below the newest one when
// early grew to keepEarly entries.
func (c *Catalog) pruneEarly() {
	if len(c.early) < keepEarly || c.lastSlot < keepEarly/2 {
		return
	}
	floor := c.lastSlot - keepEarly/2
	for inst, e := range c.early {
		if e.slot < floor {
			delete(c.early, inst)
		}
	}
}

func (c *Catalog) count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.markets)
}
