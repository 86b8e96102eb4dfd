// Package settler applies ledger commands, funding events and the
// matcher's trading output to Postgres exactly once (docs/architecture.md
// "Exactly once"):
// records are consumed with read_committed, applied a whole poll at a time
// in one Postgres transaction, and the consumer offsets are stored in that
// same transaction. Kafka's own committed offsets are never used; on every
// assignment the consumer seeks to the offsets stored in Postgres.
//
// Two consumers run side by side, each with its own group and
// transactions: the ledger consumer (ledger-commands, funding-events) and
// the trading consumer (market.open on orders, order-events, fills; see
// internal/settlement). After each committed transaction the account feed of
// what it changed is published on account-events (internal/feed).
package settler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/settler/internal/feed"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// Config configures the settler's consumers.
type Config struct {
	Brokers []string // KAFKA_BROKERS
	// KafkaCompression is the codec of the account feed's batches
	// (KAFKA_COMPRESSION, snappy).
	KafkaCompression string
	// Group is the ledger consumer's group and the key of its stored
	// offsets (SETTLER_GROUP, default "settler"); the trading consumer
	// uses Group + "-trading".
	Group string
	// MaxBatch is the most records applied in one Postgres transaction
	// (SETTLER_MAX_BATCH, default 5000).
	MaxBatch int
	// InstanceID, when set (SETTLER_INSTANCE_ID), makes both consumers
	// static members of their groups under that id: an instance restarted
	// after a crash takes its partitions back at once, where otherwise the
	// group waits for its previous incarnation's session to time out (45
	// s). It must be stable per instance and unique between instances.
	InstanceID string
}

// Default settings.
const (
	DefaultGroup    = "settler"
	DefaultMaxBatch = 5000
	// TradingGroupSuffix makes the trading consumer's group of Group.
	TradingGroupSuffix = "-trading"
	// feedQueue is how many committed batches' feeds may wait for Kafka;
	// beyond it they wait in account_feed for the relay.
	feedQueue = 256
)

// Topics are the topics the ledger consumer applies.
var Topics = []string{topics.LedgerCommands, topics.FundingEvents}

// TradingTopics are the topics the trading consumer reads.
var TradingTopics = []string{topics.Orders, topics.OrderEvents, topics.Fills}

// Settler is a running settler: its two consumers and the account feed.
type Settler struct {
	cfg      Config
	pool     *pgxpool.Pool
	log      *slog.Logger
	sys      ledger.System
	ledger   *consumer
	trading  *consumer
	producer *kgo.Client
	feed     *feed.Publisher
	metrics  *metrics

	applied, duplicates, rejected atomic.Int64
	trades                        tradingCounters
}

// New connects the consumers. They do not consume until Run.
func New(ctx context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*Settler, error) {
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("settler: %w", err)
	}
	s := &Settler{cfg: cfg, pool: pool, log: log, sys: sys, metrics: newMetrics()}
	s.producer, err = kafka.NewClient(kafka.Config{Brokers: cfg.Brokers, ClientID: "settler-feed", Compression: cfg.KafkaCompression})
	if err != nil {
		return nil, fmt.Errorf("settler: %w", err)
	}
	s.feed = feed.NewPublisher(pool, s.producer, log.With("component", "account-feed"), feedQueue)
	s.ledger, err = newConsumer("settler", cfg.Group, cfg.InstanceID, cfg.Brokers, Topics, cfg.MaxBatch, pool, log,
		s.metrics.retries.WithLabelValues(ledgerConsumer))
	if err != nil {
		s.producer.Close()
		return nil, err
	}
	s.ledger.apply = s.applyLedger
	s.trading, err = newConsumer("settler-trading", cfg.Group+TradingGroupSuffix, cfg.InstanceID, cfg.Brokers, TradingTopics, cfg.MaxBatch, pool, log,
		s.metrics.retries.WithLabelValues(tradingConsumer))
	if err != nil {
		s.ledger.close()
		s.producer.Close()
		return nil, err
	}
	s.trading.apply = s.applyTrading
	return s, nil
}

// Stats are the counts of ledger commands applied since start.
type Stats struct{ Applied, Duplicates, Rejected int64 }

// Stats returns what the ledger consumer applied so far.
func (s *Settler) Stats() Stats {
	return Stats{s.applied.Load(), s.duplicates.Load(), s.rejected.Load()}
}

// Run applies records until ctx ends or Close is called. A batch that
// cannot be written (Postgres down) is retried with backoff; nothing is
// skipped. When one consumer stops, the other and the feed stop too.
func (s *Settler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loops := []func(context.Context) error{s.ledger.run, s.trading.run, s.feed.Run}
	errs := make(chan error, len(loops))
	var wg sync.WaitGroup
	for _, run := range loops {
		wg.Go(func() {
			err := run(ctx)
			cancel()
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// applyLedger writes one batch of ledger commands and funding events: its
// entries, its account feed and the next offsets of its partitions commit
// together or not at all; the feed is published after the commit.
func (s *Settler) applyLedger(ctx context.Context, recs []*kgo.Record) error {
	cmds, invalid := decodeRecords(recs, s.log)
	offsets := nextOffsets(recs)
	var res ledger.Result
	var fb *feed.Batch
	began := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if res, err = ledger.Apply(ctx, tx, s.sys, cmds, invalid); err != nil {
			return err
		}
		if fb, err = feed.Collect(ctx, tx, feed.Changes{Entries: res.Entries}); err != nil {
			return err
		}
		return ledger.StoreOffsets(ctx, tx, s.ledger.group, offsets)
	})
	if err != nil {
		return fmt.Errorf("apply %d records: %w", len(recs), err)
	}
	s.applied.Add(int64(res.Applied))
	s.duplicates.Add(int64(res.Duplicates))
	s.rejected.Add(int64(res.Rejected))
	s.countLedger(recs, res, began)
	if res.Rejected > 0 {
		s.log.Warn("commands rejected; see journal.reason", "count", res.Rejected)
	}
	s.feed.Publish(fb)
	return nil
}

// countLedger records a committed ledger batch in the metrics.
func (s *Settler) countLedger(recs []*kgo.Record, res ledger.Result, began time.Time) {
	m := s.metrics
	m.committed(ledgerConsumer, recs, began)
	for typ, n := range res.AppliedByType {
		count(m.applied, ledgerConsumer, ledgerKind(typ), n)
	}
	for typ, n := range res.RejectedByType {
		count(m.rejected, ledgerConsumer, ledgerKind(typ), n)
	}
	m.duplicates.WithLabelValues(ledgerConsumer).Add(float64(res.Duplicates))
}

// decodeRecords decodes every record. A record that cannot be decoded
// gets a synthetic id from its position, so that it is recorded as
// rejected once and never blocks the partition.
func decodeRecords(recs []*kgo.Record, log *slog.Logger) ([]ledger.Command, map[string]string) {
	cmds := make([]ledger.Command, 0, len(recs))
	var invalid map[string]string
	for _, r := range recs {
		e, err := kafka.DecodeRecord(r)
		var c ledger.Command
		if err == nil {
			c, err = ledger.Decode(e)
		}
		if err != nil {
			if c.ID == "" {
				c.ID = invalidID(r)
				c.Type = "invalid"
			}
			c.At = r.Timestamp
			if invalid == nil {
				invalid = map[string]string{}
			}
			invalid[c.ID] = err.Error()
			log.Warn("undecodable record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
		}
		cmds = append(cmds, c)
	}
	return cmds, invalid
}

// invalidID is the journal id of a record that cannot be decoded: its
// position in the log.
func invalidID(r *kgo.Record) string {
	return fmt.Sprintf("invalid-%s-%d-%d", r.Topic, r.Partition, r.Offset)
}

// Close leaves the groups and closes the clients. Nothing is committed to
// Kafka: the offsets live in Postgres. Batches whose feed is not published
// yet stay in account_feed, for the relay.
func (s *Settler) Close() {
	s.ledger.close()
	s.trading.close()
	s.producer.Close()
}
