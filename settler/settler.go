// Package settler applies ledger commands and funding events to the
// Postgres ledger exactly once (DESIGN rule 3): records are consumed with
// read_committed, applied a whole poll at a time in one Postgres
// transaction, and the consumer offsets are stored in that same
// transaction. Kafka's own committed offsets are never used; on every
// assignment the consumer seeks to the offsets stored in Postgres.
package settler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// Config configures the ledger consumer.
type Config struct {
	Brokers []string // KAFKA_BROKERS
	// Group is the consumer group and the key of the stored offsets
	// (SETTLER_GROUP, default "settler").
	Group string
	// MaxBatch is the most records applied in one Postgres transaction
	// (SETTLER_MAX_BATCH, default 5000).
	MaxBatch int
}

// Default settings.
const (
	DefaultGroup    = "settler"
	DefaultMaxBatch = 5000
)

// Topics are the topics the settler applies.
var Topics = []string{topics.LedgerCommands, topics.FundingEvents}

// Settler is a running ledger consumer.
type Settler struct {
	cfg  Config
	pool *pgxpool.Pool
	log  *slog.Logger
	cl   *kgo.Client
	sys  ledger.System

	applied, duplicates, rejected atomic.Int64
}

// New connects the consumer. It does not consume until Run.
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
	s := &Settler{cfg: cfg, pool: pool, log: log, sys: sys}
	s.cl, err = kafka.NewClient(kafka.Config{Brokers: cfg.Brokers, ClientID: "settler"},
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(Topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(s.storedOffsets),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, fmt.Errorf("settler: %w", err)
	}
	return s, nil
}

// storedOffsets replaces the offsets of newly assigned partitions with the
// ones stored in Postgres; a partition never applied starts at its
// beginning.
func (s *Settler) storedOffsets(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	stored, err := ledger.LoadOffsets(ctx, s.pool, s.cfg.Group)
	if err != nil {
		return nil, err
	}
	for topic, parts := range assigned {
		for p := range parts {
			if next, ok := stored[topic][p]; ok {
				parts[p] = kgo.NewOffset().At(next)
			} else {
				parts[p] = kgo.NewOffset().AtStart()
			}
		}
	}
	return assigned, nil
}

// Stats are the counts of commands applied since start.
type Stats struct{ Applied, Duplicates, Rejected int64 }

// Stats returns what the settler applied so far.
func (s *Settler) Stats() Stats {
	return Stats{s.applied.Load(), s.duplicates.Load(), s.rejected.Load()}
}

// Run applies records until ctx ends or the client is closed. A batch that
// cannot be written (Postgres down) is retried with backoff; nothing is
// skipped.
func (s *Settler) Run(ctx context.Context) error {
	// A poll blocks rebalances until AllowRebalance; leaving the group at
	// Close needs them unblocked.
	defer s.cl.AllowRebalance()
	for {
		fetches := s.cl.PollRecords(ctx, s.cfg.MaxBatch)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				s.log.Warn("fetch", "topic", topic, "partition", p, "error", err)
			}
		})
		if recs := fetches.Records(); len(recs) > 0 {
			if err := s.applyWithRetry(ctx, recs); err != nil {
				s.cl.AllowRebalance()
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		s.cl.AllowRebalance()
	}
}

func (s *Settler) applyWithRetry(ctx context.Context, recs []*kgo.Record) error {
	backoff := 100 * time.Millisecond
	for {
		err := s.apply(ctx, recs)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ledger.ErrFenced):
			s.log.Warn("offsets moved past this batch; seeking to the stored offsets")
			return s.reseek(ctx, recs)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		s.log.Error("apply batch; retrying", "records", len(recs), "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// reseek points the partitions of recs at their stored offsets.
func (s *Settler) reseek(ctx context.Context, recs []*kgo.Record) error {
	stored, err := ledger.LoadOffsets(ctx, s.pool, s.cfg.Group)
	if err != nil {
		return err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range recs {
		if set[r.Topic] == nil {
			set[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: stored[r.Topic][r.Partition]}
	}
	s.cl.SetOffsets(set)
	return nil
}

// apply writes one batch: its entries and the next offsets of its
// partitions commit together or not at all.
func (s *Settler) apply(ctx context.Context, recs []*kgo.Record) error {
	cmds, invalid := decodeRecords(recs, s.log)
	offsets := nextOffsets(recs)
	var res ledger.Result
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if res, err = ledger.Apply(ctx, tx, s.sys, cmds, invalid); err != nil {
			return err
		}
		return ledger.StoreOffsets(ctx, tx, s.cfg.Group, offsets)
	})
	if err != nil {
		return fmt.Errorf("apply %d records: %w", len(recs), err)
	}
	s.applied.Add(int64(res.Applied))
	s.duplicates.Add(int64(res.Duplicates))
	s.rejected.Add(int64(res.Rejected))
	if res.Rejected > 0 {
		s.log.Warn("commands rejected; see journal.reason", "count", res.Rejected)
	}
	return nil
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
				c.ID = fmt.Sprintf("invalid-%s-%d-%d", r.Topic, r.Partition, r.Offset)
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

func nextOffsets(recs []*kgo.Record) []ledger.Offset {
	type tp struct {
		topic string
		part  int32
	}
	next := map[tp]int64{}
	for _, r := range recs {
		k := tp{r.Topic, r.Partition}
		if r.Offset+1 > next[k] {
			next[k] = r.Offset + 1
		}
	}
	out := make([]ledger.Offset, 0, len(next))
	for k, n := range next {
		out = append(out, ledger.Offset{Topic: k.topic, Partition: k.part, Next: n})
	}
	return out
}

// Close leaves the group and closes the client. Nothing is committed to
// Kafka: the offsets live in Postgres.
func (s *Settler) Close() {
	s.cl.AllowRebalance()
	s.cl.Close()
}
