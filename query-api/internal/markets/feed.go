package markets

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Feed keeps a Model up to date from the log.
type Feed struct {
	cl    *kgo.Client
	model *Model
	log   *slog.Logger
	lag   *kafka.Lag // group label: the client id
}

// wanted are the record types the model uses; the type header lets the
// feed skip the rest without decoding them.
var wanted = map[string]bool{
	topics.TypeMarketOpen: true, topics.TypeMarketStatus: true, topics.TypeTradeExecuted: true,
	topics.TypeOrderAccepted: true, topics.TypeOrderFilled: true, topics.TypeOrderCancelled: true,
	topics.TypeOrderExpired: true, topics.TypeOrderRejected: true, topics.TypeCancelRejected: true,
}

// NewFeed reads orders, order-events and fills from the first record
// written at or after since: a live slot's first record (its market.open)
// is written 64 slots before its block, and its last (finalized) two
// epochs after it, so since = now − (64 + 64 + margin) slots rebuilds
// every live market. The client is read_committed and in no consumer
// group: each instance reads everything.
func NewFeed(cfg kafka.Config, since time.Time, model *Model, log *slog.Logger) (*Feed, error) {
	cl, err := kafka.NewClient(cfg,
		kgo.ConsumeTopics(topics.Orders, topics.OrderEvents, topics.Fills),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(since.UnixMilli())),
		// The commit markers of the matcher's transactions reach Run,
		// which skips them, so that the lag falls to 0.
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, fmt.Errorf("market feed: %w", err)
	}
	lag := kafka.NewLag(cfg.ClientID)
	lag.ListWith(cl)
	return &Feed{cl: cl, model: model, log: log, lag: lag}, nil
}

// Lag returns the feed's consumer metrics, to register.
func (f *Feed) Lag() *kafka.Lag { return f.lag }

// Run applies records until ctx ends, then closes the client. After each
// poll it flushes the model, so held book changes go out without waiting
// for the market's next input.
func (f *Feed) Run(ctx context.Context) error {
	defer f.cl.Close()
	for {
		fetches := f.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			f.log.Warn("market feed: fetch", "topic", topic, "partition", p, "error", err)
		})
		recs := fetches.Records()
		for _, r := range kafka.DataRecords(recs) {
			f.apply(r)
		}
		f.model.Flush()
		f.lag.Applied(recs)
	}
}

func (f *Feed) apply(r *kgo.Record) {
	if typ, _, ok := kafka.RecordType(r); ok && !wanted[typ] {
		return
	}
	e, err := kafka.DecodeRecord(r)
	if err != nil {
		f.log.Warn("market feed: skip undecodable record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
		return
	}
	if err := f.model.Apply(e); err != nil {
		f.log.Warn("market feed: skip record", "topic", r.Topic, "id", e.ID, "error", err)
	}
}
