// Package matcher is the exchange's sequencer: it owns partitions of the
// orders topic and, per slot, both markets' books and the slot's positions,
// and writes order events and fills exactly once (docs/matcher.md).
//
// New, Run and Close are the whole surface, so the binary and an
// in-process stack start it the same way.
package matcher

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/matcher/internal/kafkaloop"
	"blockspace.exchange/platform/kafka"
)

// Config configures a matcher instance.
type Config struct {
	// Kafka is how to reach the brokers; the client id defaults to
	// "matcher".
	Kafka kafka.Config
	// Group is the consumer group shared by all instances; default
	// "matcher".
	Group string
	// InstanceID names this instance: stable across its restarts, unique
	// among running instances (a pod name, a host name). It is the
	// transactional id, so a restarted instance aborts what its previous
	// incarnation left open.
	InstanceID string
	// StaticMember makes InstanceID the group member's static id, so a
	// restart resumes without a rebalance (see kafkaloop.Config).
	StaticMember bool
	// MaxBatch bounds the records of one transaction; default 10,000.
	MaxBatch int
	// SnapshotEvery is how many input records of a partition go between
	// two snapshots of its state; default 50,000, negative turns them off.
	SnapshotEvery int
	Logger        *slog.Logger
}

// Matcher is a running matcher instance.
type Matcher struct {
	loop *kafkaloop.Loop
}

// New connects to Kafka; Run starts consuming.
func New(cfg Config) (*Matcher, error) {
	if cfg.InstanceID == "" {
		return nil, fmt.Errorf("matcher: missing instance id")
	}
	if cfg.Kafka.ClientID == "" {
		cfg.Kafka.ClientID = "matcher"
	}
	loop, err := kafkaloop.New(kafkaloop.Config{
		Kafka:           cfg.Kafka,
		Group:           cfg.Group,
		TransactionalID: "matcher-" + cfg.InstanceID,
		StaticMember:    cfg.StaticMember,
		MaxPollRecords:  cfg.MaxBatch,
		SnapshotEvery:   cfg.SnapshotEvery,
		Logger:          cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("matcher: %w", err)
	}
	return &Matcher{loop: loop}, nil
}

// Run matches until ctx ends, then finishes and commits the batch in hand.
func (m *Matcher) Run(ctx context.Context) error {
	if err := m.loop.Run(ctx); err != nil {
		return fmt.Errorf("matcher: %w", err)
	}
	return nil
}

// Close leaves the consumer group. Call it after Run returned.
func (m *Matcher) Close() { m.loop.Close() }

// Ping checks that Kafka answers, for readiness.
func (m *Matcher) Ping(ctx context.Context) error { return m.loop.Ping(ctx) }

// RegisterMetrics adds the matcher's counters, gauges and consumer lag to
// reg.
func (m *Matcher) RegisterMetrics(reg prometheus.Registerer) error {
	st := m.loop.Stats()
	counters := []struct {
		name, help string
		value      func() int64
	}{
		{"matcher_records_total", "Input records of orders applied, counted before their transaction ends.", st.Records.Load},
		{"matcher_committed_records_total", "Input records of orders in transactions that committed.", st.Committed.Load},
		{"matcher_outputs_total", "Order events and fills produced.", st.Outputs.Load},
		{"matcher_skipped_total", "Input records that could not be interpreted and were skipped.", st.Skipped.Load},
		{"matcher_rebuilds_total", "Engines brought up to date by reading their partition.", st.Rebuilds.Load},
		{"matcher_aborts_total", "Transactions that did not commit.", st.Aborts.Load},
		{"matcher_snapshots_total", "Snapshot rounds written to matcher-snapshots.", st.Snapshots.Load},
		{"matcher_snapshot_loads_total", "Rebuilds that started from a snapshot round.", st.SnapshotsLoaded.Load},
		{"matcher_rebuild_records_total", "Orders records read to bring engines up to date.", st.RebuildRecords.Load},
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "matcher_books", Help: "Order books held, one per open market."},
			func() float64 { return float64(st.Books.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "matcher_resting_orders", Help: "Orders resting in the books held."},
			func() float64 { return float64(st.Resting.Load()) }),
		m.loop.Lag(),
	}
	for _, c := range counters {
		value := c.value
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(value()) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("matcher: register metrics: %w", err)
		}
	}
	return nil
}
