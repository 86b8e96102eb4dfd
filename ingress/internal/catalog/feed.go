package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Feed keeps a Catalog up to date from the log.
type Feed struct {
	cl    *kgo.Client
	since time.Time
	cat   *Catalog
	log   *slog.Logger
	// need is, per topic and partition, the offset the feed must read
	// past before the catalog is ready; done partitions are removed.
	need map[string]map[int32]int64
	// tap sees every record the feed reads, control records included.
	tap func(*kgo.Record)
	lag *kafka.Lag // nil until CountIn
}

// feedTopics are the topics the catalog learns from.
var feedTopics = []string{topics.Orders, topics.OrderEvents}

// Horizon is how far back a feed starts so that it sees the market.open
// of every market still open: a market opens at most topics.MarketHorizon
// slots before its block, plus a margin for clock skew and late opens.
func Horizon(slotLength time.Duration) time.Duration {
	if slotLength <= 0 {
		slotLength = 12 * time.Second
	}
	return (topics.MarketHorizon + topics.LayoutMargin) * slotLength
}

// NewFeed returns a feed that reads orders and order-events from the first
// record written at or after since, with a read_committed client of its
// own that reaches the brokers of cl, in no consumer group: each ingress
// instance reads everything. Control records are kept so that the feed
// can tell when it has read to the end offsets it saw at start.
func NewFeed(cl *kgo.Client, since time.Time, cat *Catalog, log *slog.Logger) (*Feed, error) {
	r, err := kafka.NewReader(cl,
		kgo.ConsumeTopics(feedTopics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(since.UnixMilli())),
		kgo.KeepControlRecords(),
	)
	if err != nil {
		return nil, fmt.Errorf("market catalog feed: %w", err)
	}
	return &Feed{cl: r, since: since, cat: cat, log: log}, nil
}

// Run applies records until ctx ends, then closes its client. The
// catalog becomes ready once every partition has been read up to its last
// stable offset of the moment Run started.
func (f *Feed) Run(ctx context.Context) error {
	defer f.cl.Close()
	if err := f.targets(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	f.checkReady()
	for {
		fetches := f.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			f.log.Warn("market catalog feed: fetch", "topic", topic, "partition", p, "error", err)
		})
		fetches.EachRecord(f.apply)
		f.lag.Applied(fetches.Records())
		f.checkReady()
	}
}

// targets records, per partition holding records since f.since, the last
// stable offset to read up to; retried until the broker answers.
func (f *Feed) targets(ctx context.Context) error {
	adm := kadm.NewClient(f.cl)
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		need, err := f.listTargets(lctx, adm)
		cancel()
		if err == nil {
			f.need = need
			return nil
		}
		f.log.Warn("market catalog feed: list offsets; retrying", "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (f *Feed) listTargets(ctx context.Context, adm *kadm.Client) (map[string]map[int32]int64, error) {
	ends, err := adm.ListCommittedOffsets(ctx, feedTopics...)
	if err != nil {
		return nil, err
	}
	starts, err := adm.ListOffsetsAfterMilli(ctx, f.since.UnixMilli(), feedTopics...)
	if err != nil {
		return nil, err
	}
	need := make(map[string]map[int32]int64)
	for _, t := range feedTopics {
		need[t] = make(map[int32]int64)
	}
	var listErr error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			listErr = fmt.Errorf("%s[%d]: %w", end.Topic, end.Partition, end.Err)
			return
		}
		start, ok := starts.Lookup(end.Topic, end.Partition)
		if ok && start.Err == nil && start.Offset >= end.Offset {
			return // nothing to read
		}
		need[end.Topic][end.Partition] = end.Offset
	})
	return need, listErr
}

// Tap has fn see every record the feed reads after the catalog applied
// it, control records included (the commit markers of the matcher's
// transactions). It must be set before Run and must not block.
func (f *Feed) Tap(fn func(*kgo.Record)) { f.tap = fn }

// CountIn makes the feed tell l what it read. It reads control records
// too, so its lag on the matcher's transactional order-events falls to 0
// when it is caught up. Call it before Run.
func (f *Feed) CountIn(l *kafka.Lag) {
	f.lag = l
	l.ListWith(f.cl)
}

func (f *Feed) apply(r *kgo.Record) {
	f.reached(r)
	if f.tap != nil {
		defer f.tap(r)
	}
	if r.Attrs.IsControl() {
		return
	}
	if typ, _, ok := kafka.RecordType(r); ok && typ != topics.TypeMarketOpen && typ != topics.TypeMarketStatus {
		return
	}
	e, err := kafka.DecodeRecord(r)
	if err != nil {
		f.log.Warn("market catalog feed: skip undecodable record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
		return
	}
	if err := f.cat.Apply(e); err != nil {
		f.log.Warn("market catalog feed: skip record", "topic", r.Topic, "id", e.ID, "error", err)
	}
}

// reached removes a partition from what is still needed once r is at or
// past its target's last record.
func (f *Feed) reached(r *kgo.Record) {
	ps := f.need[r.Topic]
	if end, ok := ps[r.Partition]; ok && r.Offset >= end-1 {
		delete(ps, r.Partition)
	}
}

func (f *Feed) checkReady() {
	if f.cat.Err() == nil {
		return
	}
	for _, ps := range f.need {
		if len(ps) > 0 {
			return
		}
	}
	f.cat.SetReady()
	f.log.Info("market catalog caught up", "markets", f.cat.count())
}
