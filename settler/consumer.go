package settler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/settler/internal/ledger"
)

// consumer is one exactly-once consumer of the settler: it polls its
// topics read_committed, hands what one poll returned to apply (which
// writes it and the next offsets in one Postgres transaction), and on
// every assignment seeks to the offsets stored in Postgres. Kafka's own
// committed offsets are never used.
type consumer struct {
	name       string
	group      string
	instanceID string
	maxBatch   int
	pool       *pgxpool.Pool
	log        *slog.Logger
	cl         *kgo.Client
	// lag follows the offsets applied, for kafka_consumer_lag_records;
	// retries counts settler_batch_retries_total.
	lag     *kafka.Lag
	retries prometheus.Counter
	// apply writes one poll's records; ledger.ErrFenced means another
	// consumer stored offsets past them.
	apply func(ctx context.Context, recs []*kgo.Record) error
}

func newConsumer(name, group, instanceID string, brokers, topics []string, maxBatch int, pool *pgxpool.Pool, log *slog.Logger,
	retries prometheus.Counter) (*consumer, error) {
	c := &consumer{name: name, group: group, instanceID: instanceID, maxBatch: maxBatch, pool: pool, log: log,
		lag: kafka.NewLag(group), retries: retries}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(c.storedOffsets),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.revoked),
		kgo.FetchMaxWait(100 * time.Millisecond),
		// The commit markers of the matcher's transactions reach the
		// loop, which skips them, so that the lag falls to 0.
		kgo.KeepControlRecords(),
	}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	var err error
	c.cl, err = kafka.NewClient(kafka.Config{Brokers: brokers, ClientID: name}, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.lag.ListWith(c.cl)
	return c, nil
}

// revoked forgets the lag of partitions given to another instance.
func (c *consumer) revoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	c.lag.Revoke(parts)
}

// storedOffsets replaces the offsets of newly assigned partitions with the
// ones stored in Postgres; a partition never applied starts at its
// beginning.
func (c *consumer) storedOffsets(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	stored, err := ledger.LoadOffsets(ctx, c.pool, c.group)
	if err != nil {
		return nil, err
	}
	for topic, parts := range assigned {
		for p := range parts {
			if next, ok := stored[topic][p]; ok {
				parts[p] = kgo.NewOffset().At(next)
				c.lag.Position(topic, p, next)
			} else {
				// Its lag shows from its first record on: records before
				// the start may have been dropped by retention.
				parts[p] = kgo.NewOffset().AtStart()
			}

		}
	}
	return assigned, nil
}

// run applies records until ctx ends or the client is closed. A batch that
// cannot be written (Postgres down) is retried with backoff; nothing is
// skipped. It applies what one poll returned at once rather than waiting
// to fill a batch, so a record waits at most for the batch before it.
func (c *consumer) run(ctx context.Context) error {
	// A poll blocks rebalances until AllowRebalance; leaving the group at
	// Close needs them unblocked.
	defer c.cl.AllowRebalance()
	for {
		fetches := c.cl.PollRecords(ctx, c.maxBatch)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		var fenced error
		fetches.EachError(func(topic string, p int32, err error) {
			switch {
			case errors.Is(err, kerr.FencedInstanceID):
				fenced = err
			case !errors.Is(err, context.Canceled):
				c.log.Warn("fetch", "consumer", c.name, "topic", topic, "partition", p, "error", err)
			}
		})
		if fenced != nil {
			// Another process joined the group under this instance's id
			// (SETTLER_INSTANCE_ID) and has its partitions. Joining again
			// is refused for as long as that process lives; this one ends
			// rather than stay up with nothing to do.
			return fmt.Errorf("%s: another process is member %s of group %s: %w", c.name, c.instanceID, c.group, fenced)
		}
		recs := fetches.Records()
		applied := true
		if data := kafka.DataRecords(recs); len(data) > 0 {
			var err error
			if applied, err = c.applyWithRetry(ctx, data); err != nil {
				c.cl.AllowRebalance()
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if applied {
			// The markers among and after the records need no applying:
			// the offsets stored stay before a trailing one, which a
			// restart reads again.
			c.lag.Applied(recs)
		}
		c.cl.AllowRebalance()
	}
}

func (c *consumer) applyWithRetry(ctx context.Context, recs []*kgo.Record) (bool, error) {
	backoff := 100 * time.Millisecond
	for {
		err := c.apply(ctx, recs)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, ledger.ErrFenced):
			c.log.Warn("offsets moved past this batch; seeking to the stored offsets", "consumer", c.name)
			return false, c.reseek(ctx, recs)
		case ctx.Err() != nil:
			return false, ctx.Err()
		}
		c.retries.Inc()
		c.log.Error("apply batch; retrying", "consumer", c.name, "records", len(recs), "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// reseek points the partitions of recs at their stored offsets.
func (c *consumer) reseek(ctx context.Context, recs []*kgo.Record) error {
	stored, err := ledger.LoadOffsets(ctx, c.pool, c.group)
	if err != nil {
		return err
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range recs {
		if set[r.Topic] == nil {
			set[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: stored[r.Topic][r.Partition]}
		c.lag.Position(r.Topic, r.Partition, stored[r.Topic][r.Partition])
	}
	c.cl.SetOffsets(set)
	return nil
}

// close leaves the group and closes the client. Nothing is committed to
// Kafka: the offsets live in Postgres.
func (c *consumer) close() {
	c.cl.AllowRebalance()
	c.cl.Close()
}

// nextOffsets are the offsets after recs, per partition.
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
