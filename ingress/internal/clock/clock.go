// Package clock is the slot clock: the one component that reads the wall
// clock. It turns the passing of time into records on the orders topic
// (docs/architecture.md "Time is an event"): market.open commands when a slot
// enters a family's horizon and a registered validator proposes it, and the
// clock.tick records trading_closed, submission_closed and finalized at the
// slot's time points. Every record's id depends only on slot and kind and its
// envelope time is the scheduled instant, so replicas and restarts write
// identical duplicates that the matcher drops.
package clock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Horizons of the two families (docs/markets.md "Slot time"): a
// slot's whole-block market opens when the slot is 64 slots ahead, its
// inclusion-preconf market when it is 32 ahead.
const (
	WholeBlockHorizon = topics.MarketHorizon
	PreconfHorizon    = 32
)

// Seller is who sells a slot: the user who registered its proposer, with
// what the market.open carries about them.
type Seller struct {
	UserID            int64
	AccountID         int64 // the user's preconf trading account
	Pubkey            string
	CollateralPerSlot string
	ValidatorType     int
	Fees              Fees
}

// Fees are the fee rates of a slot's markets, fractions of trade value.
type Fees struct {
	Buy, PrimarySell, SecondarySell string
}

// Sellers answers who sells a slot. ok is false when the slot's proposer
// is not registered (no market opens); an error means "not known yet" and
// the clock asks again until the slot's trading would have closed.
type Sellers interface {
	Seller(ctx context.Context, slot uint64) (s Seller, ok bool, err error)
}

// Producer writes records; *kgo.Client is one.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Config configures a clock.
type Config struct {
	Env    environment.Environment
	Params Params
	// Lookback is how far before its start a clock republishes ticks,
	// so that a restart after a crash or pause misses none. Default: the
	// finality delay plus two slots.
	Lookback time.Duration
	// LayoutRefresh is how often the orders layout is re-read (30s).
	LayoutRefresh time.Duration
	// Layout reads the orders layout (kafka.Layout in production).
	Layout func(ctx context.Context) (topics.SlotLayout, error)
	// Now is the wall clock; time.Now unless a test drives the clock.
	Now    func() time.Time
	Logger *slog.Logger
}

// Clock publishes the slot ticks. Advance is its whole logic; Run calls
// it whenever the next event is due.
type Clock struct {
	cfg      Config
	sellers  Sellers
	out      Producer
	layout   topics.SlotLayout
	layoutAt time.Time
	// done: every event at or before it is published.
	done time.Time
	// pending are market opens whose seller was not known yet, or whose
	// proposer was not registered yet.
	pending map[openKey]event
}

type openKey struct {
	slot   uint64
	family topics.Family
}

// New returns a clock that starts Lookback before cfg.Now().
func New(cfg Config, sellers Sellers, out Producer) (*Clock, error) {
	if err := cfg.Env.ValidateClock(); err != nil {
		return nil, err
	}
	if err := cfg.Params.Validate(); err != nil {
		return nil, err
	}
	if cfg.Layout == nil {
		return nil, errors.New("slot clock: no layout reader")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = (environment.FinalitySlots + 2) * cfg.Env.SlotLength
	}
	if cfg.LayoutRefresh <= 0 {
		cfg.LayoutRefresh = 30 * time.Second
	}
	return &Clock{
		cfg: cfg, sellers: sellers, out: out,
		done:    cfg.Now().Add(-cfg.Lookback),
		pending: make(map[openKey]event),
	}, nil
}

// Run publishes each event when it is due until ctx ends. After a pause
// (a stopped process, a suspended machine, an unreachable broker) the
// next Advance publishes everything that came due meanwhile, in order.
func (c *Clock) Run(ctx context.Context) error {
	for {
		wait := time.Second
		if err := c.Advance(ctx, c.cfg.Now()); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.cfg.Logger.Warn("slot clock: publish failed; retrying", "error", err)
		} else {
			wait = c.nextAfter(c.done).Sub(c.cfg.Now())
			if len(c.pending) > 0 && wait > time.Second {
				wait = time.Second
			}
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Advance publishes every event due in (last Advance, now], oldest first,
// and retries market opens whose seller was not known. On error nothing
// counts as published and the next call publishes the same events again.
func (c *Clock) Advance(ctx context.Context, now time.Time) error {
	if !now.After(c.done) {
		return nil
	}
	if err := c.refreshLayout(ctx, now); err != nil {
		return err
	}
	evs := c.retryable(now)
	evs = append(evs, c.events(c.done, now)...)
	var recs []*kgo.Record
	for _, ev := range evs {
		rs, err := c.records(ctx, ev, now)
		if err != nil {
			return err
		}
		recs = append(recs, rs...)
	}
	if len(recs) > 0 {
		if err := c.out.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("slot clock: produce %d records: %w", len(recs), err)
		}
	}
	c.done = now
	return nil
}

func (c *Clock) refreshLayout(ctx context.Context, now time.Time) error {
	if !c.layoutAt.IsZero() && now.Sub(c.layoutAt) < c.cfg.LayoutRefresh {
		return nil
	}
	l, err := c.cfg.Layout(ctx)
	if err != nil {
		if c.layoutAt.IsZero() {
			return fmt.Errorf("slot clock: read orders layout: %w", err)
		}
		c.cfg.Logger.Warn("slot clock: keeping the last orders layout", "error", err)
		return nil
	}
	c.layout, c.layoutAt = l, now
	return nil
}

// retryable returns the pending opens still worth publishing and forgets
// the ones whose trading has closed.
func (c *Clock) retryable(now time.Time) []event {
	var out []event
	for k, ev := range c.pending {
		if !now.Before(c.cfg.Env.Times(k.slot).Maturity) {
			delete(c.pending, k)
			continue
		}
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out
}

// records returns the records of ev: none when ev publishes nothing (no
// registered proposer yet, trading already closed, seller not known yet), the
// market open or tick on the slot's orders partition, and with the
// whole-block open, the slot's proposer duty on the validators topic.
func (c *Clock) records(ctx context.Context, ev event, now time.Time) ([]*kgo.Record, error) {
	if ev.family == "" {
		env, err := topics.ClockTick{Slot: ev.slot, Kind: ev.tick}.Envelope(ev.at)
		if err != nil {
			return nil, fmt.Errorf("slot clock: %w", err)
		}
		return c.ordersRecord(ev.slot, env)
	}
	k := openKey{ev.slot, ev.family}
	delete(c.pending, k)
	if !now.Before(c.cfg.Env.Times(ev.slot).Maturity) {
		return nil, nil
	}
	seller, ok, err := c.sellers.Seller(ctx, ev.slot)
	if err != nil {
		c.cfg.Logger.Debug("slot clock: seller not known yet", "slot", ev.slot, "family", ev.family, "error", err)
		c.pending[k] = ev
		return nil, nil
	}
	if !ok {
		// Asked again until the slot's maturity, so a validator that
		// registers after the open instant still gets the market, and a
		// restarted replica (which asks again for the slots it looks back
		// on) opens no market a running one would not.
		c.pending[k] = ev
		return nil, nil
	}
	env, err := c.marketOpen(ev, seller).Envelope(ev.at)
	if err != nil {
		return nil, fmt.Errorf("slot clock: %w", err)
	}
	recs, err := c.ordersRecord(ev.slot, env)
	if err != nil || ev.family != topics.WholeBlock {
		return recs, err
	}
	duty := topics.ProposerDuty{Slot: ev.slot, Epoch: ev.slot / environment.SlotsPerEpoch,
		Pubkey: seller.Pubkey, UserID: seller.UserID, AccountID: seller.AccountID}
	if env, err = duty.Envelope(ev.at); err != nil {
		return nil, fmt.Errorf("slot clock: %w", err)
	}
	r, err := kafka.NewRecord(topics.Validators, []byte(seller.Pubkey), env)
	if err != nil {
		return nil, fmt.Errorf("slot clock: %w", err)
	}
	return append(recs, r), nil
}

// ordersRecord puts env on slot's partition of the orders topic.
func (c *Clock) ordersRecord(slot uint64, env topics.Envelope) ([]*kgo.Record, error) {
	r, err := kafka.NewSlotRecord(topics.Orders, c.layout, slot, env)
	if err != nil {
		return nil, fmt.Errorf("slot clock: %w", err)
	}
	return []*kgo.Record{r}, nil
}

func (c *Clock) marketOpen(ev event, s Seller) topics.MarketOpen {
	t := c.cfg.Env.Times(ev.slot)
	m := c.cfg.Params.marketOpen(ev.slot, ev.family)
	m.SellerUserID, m.SellerAccountID = s.UserID, s.AccountID
	m.CollateralPerSlot, m.ValidatorType = s.CollateralPerSlot, s.ValidatorType
	m.BuyFeeRate, m.PrimarySellFeeRate, m.SecondarySellFeeRate = s.Fees.Buy, s.Fees.PrimarySell, s.Fees.SecondarySell
	m.MaturityTime, m.TrxSubmitTime = t.Maturity.UnixMilli(), t.TrxSubmit.UnixMilli()
	m.BlockTime, m.FinalityTime = t.Block.UnixMilli(), t.Finality.UnixMilli()
	return m
}
