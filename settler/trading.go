package settler

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/settler/internal/feed"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/internal/settlement"
	"blockspace.exchange/topics"
)

// TradingStats are the counts of the trading consumer since start.
type TradingStats struct {
	Fills, Duplicates, Parked, Rejected int64 // fills settled, seen before, waiting for their slot, refused
	Events, Stale                       int64 // order events that changed an order, and those older than its state
	Released                            int64 // orders whose settlement ended
	Issued                              int64 // slots issued to their seller
	Invalid                             int64 // other records that could not be applied
}

type tradingCounters struct {
	fills, duplicates, parked, rejected, events, stale, released, issued, invalid atomic.Int64
}

func (c *tradingCounters) add(r settlement.Result) {
	c.fills.Add(int64(r.Fills))
	c.duplicates.Add(int64(r.Duplicates))
	c.parked.Add(int64(r.Parked))
	c.rejected.Add(int64(r.Rejected))
	c.events.Add(int64(r.Events))
	c.stale.Add(int64(r.Stale))
	c.released.Add(int64(r.Released))
	c.issued.Add(int64(r.Issued))
	c.invalid.Add(int64(r.Invalid))
}

// TradingStats returns what the trading consumer applied so far.
func (s *Settler) TradingStats() TradingStats {
	c := &s.trades
	return TradingStats{Fills: c.fills.Load(), Duplicates: c.duplicates.Load(), Parked: c.parked.Load(), Rejected: c.rejected.Load(),
		Events: c.events.Load(), Stale: c.stale.Load(), Released: c.released.Load(), Issued: c.issued.Load(), Invalid: c.invalid.Load()}
}

// FeedStats are the account feed records sent since start by the
// publisher and by the relay, and the batches left to the relay because
// the publisher's queue was full.
type FeedStats struct{ Published, Relayed, Deferred int64 }

// FeedStats returns what the account feed sent so far.
func (s *Settler) FeedStats() FeedStats {
	p, r, d := s.feed.Counts()
	return FeedStats{Published: p, Relayed: r, Deferred: d}
}

// applyTrading writes one batch of the trading topics: its settlement, its
// account feed and the next offsets of its partitions commit together or
// not at all; the feed is published after the commit.
func (s *Settler) applyTrading(ctx context.Context, recs []*kgo.Record) error {
	trs := decodeTrading(recs, s.log)
	offsets := nextOffsets(recs)
	var res settlement.Result
	var fb *feed.Batch
	began := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(trs) > 0 {
			var err error
			if res, err = settlement.Apply(ctx, tx, s.sys, trs, s.log); err != nil {
				return err
			}
			if fb, err = feed.Collect(ctx, tx, changes(res)); err != nil {
				return err
			}
		}
		return ledger.StoreOffsets(ctx, tx, s.trading.group, offsets)
	})
	if err != nil {
		return fmt.Errorf("apply %d trading records: %w", len(recs), err)
	}
	s.trades.add(res)
	s.countTrading(recs, res, began)
	if res.Rejected > 0 {
		s.log.Error("fills refused; see journal.reason", "count", res.Rejected)
	}
	s.feed.Publish(fb)
	return nil
}

// countTrading records a committed trading batch in the metrics: fills,
// order events and market commands applied, fills refused.
func (s *Settler) countTrading(recs []*kgo.Record, r settlement.Result, began time.Time) {
	m := s.metrics
	m.committed(tradingConsumer, recs, began)
	count(m.applied, tradingConsumer, "fill", r.Fills)
	count(m.applied, tradingConsumer, "order_event", r.Events)
	count(m.applied, tradingConsumer, "market_open", r.Opens)
	count(m.applied, tradingConsumer, "market_status", r.Statuses)
	count(m.rejected, tradingConsumer, "fill", r.Rejected)
	m.duplicates.WithLabelValues(tradingConsumer).Add(float64(r.Duplicates))
}

func changes(r settlement.Result) feed.Changes {
	c := feed.Changes{Entries: r.Entries, Balances: r.Balances, Positions: make([]feed.PositionKey, len(r.Positions))}
	for i, k := range r.Positions {
		c.Positions[i] = feed.PositionKey{Account: k.Account, Instrument: k.Instrument}
	}
	return c
}

// decodeTrading decodes the records the settlement reads and passes over
// the others (order commands, ticks, book changes) by their type header.
// A fill that cannot be decoded is kept, marked invalid, so that its
// journal entry records it as refused once.
func decodeTrading(recs []*kgo.Record, log *slog.Logger) []settlement.Record {
	out := make([]settlement.Record, 0, len(recs))
	for _, r := range recs {
		if typ, _, ok := kafka.RecordType(r); ok && !settlement.Wanted(r.Topic, typ) {
			continue
		}
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			log.Warn("undecodable record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
			if r.Topic == topics.Fills {
				out = append(out, settlement.Record{ID: invalidID(r), Type: topics.TypeTradeExecuted, At: r.Timestamp, Invalid: err.Error()})
			}
			continue
		}
		if !settlement.Wanted(r.Topic, e.Type) {
			continue
		}
		out = append(out, settlement.Decode(r.Topic, e, r.Value))
	}
	return out
}
