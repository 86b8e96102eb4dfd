package kafkaloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// batchTimeout bounds finishing a polled batch. A batch is finished even
// when Run's context ends meanwhile: shutting down commits what was read.
const batchTimeout = 30 * time.Second

// metadataMinAge is the least time between two metadata requests. A
// produce that Kafka answers with a retriable error waits for fresh
// metadata before it is sent again, and the first produce of a
// transaction is often answered CONCURRENT_TRANSACTIONS: the coordinator
// writes the previous transaction's markers after it answered its
// commit, and the matcher writes the same partitions transaction after
// transaction. With franz-go's default of 5 s, each such answer held the
// transaction for up to 5 s (docs/matcher.md "Exactly once and
// rebuilding").
const metadataMinAge = 100 * time.Millisecond

// maxBufferedRecords lets a whole batch's outputs (a few per input record)
// wait in the client for End's flush instead of blocking Produce on broker
// round trips mid-batch.
const maxBufferedRecords = 1 << 20

// Loop is one matcher instance's consume-transform-produce loop.
type Loop struct {
	cfg  Config
	log  *slog.Logger
	sess *kgo.GroupTransactSession

	// parts is only touched by the goroutine in Run.
	parts map[int32]*partition
	stats Stats
	// lag follows the offsets committed, for kafka_consumer_lag_records.
	lag *kafka.Lag

	// snapshotPartBytes is the most compressed state one snapshot record
	// carries: snapshotPartBytes, less in tests.
	snapshotPartBytes int

	// beforeEnd, when set, runs before each transaction ends; an error
	// stops Run there, leaving the transaction open like a crash would.
	// Tests set it, and so does the kill tests' stop point
	// (stoppoint_killtest.go).
	beforeEnd func() error
	// outputsOf, when set, stands in for the engines: it returns the
	// outputs of a record, computed before. The benchmark that measures
	// the matcher's Kafka work without its matching sets it.
	outputsOf func(*kgo.Record) []engine.Output
}

// partition is the engine of one orders partition and the offset of the
// next record it expects.
type partition struct {
	engine *engine.Engine
	next   int64
	keys   map[uint64][]byte
	// lastTime is the timestamp of the last record applied; snapshots
	// carry it.
	lastTime int64
	// sinceSnapshot counts records applied since the last snapshot round;
	// snapshotted holds the keys of matcher-snapshots that round wrote
	// (or that the partition held when the engine was restored), which
	// the next round rewrites or deletes.
	sinceSnapshot int
	snapshotted   map[string]bool
}

// Stats are counters for the metrics endpoint, safe to read from any
// goroutine.
type Stats struct {
	// Records counts input records as their batch is applied, before its
	// transaction ends; Committed counts them once it committed.
	Records   atomic.Int64
	Committed atomic.Int64
	Outputs   atomic.Int64 // output records produced, committed or not
	Skipped   atomic.Int64 // input records that could not be interpreted
	Rebuilds  atomic.Int64 // engines brought up to date from the log
	Aborts    atomic.Int64 // transactions that did not commit
	Assigned  atomic.Int64 // orders partitions this instance holds now
	// Books and Resting are the order books the engines hold and the
	// orders resting in them, as of the last transaction's end.
	Books   atomic.Int64
	Resting atomic.Int64

	Snapshots       atomic.Int64 // snapshot rounds written
	SnapshotsLoaded atomic.Int64 // rebuilds that started from a snapshot round
	RebuildRecords  atomic.Int64 // orders records read to bring engines up to date
}

// New connects the transactional session. Consumption starts in Run.
func New(cfg Config) (*Loop, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, log: cfg.Logger, parts: make(map[int32]*partition), snapshotPartBytes: snapshotPartBytes, lag: kafka.NewLag(cfg.Group)}
	var err error
	if l.beforeEnd, err = stopPoint(l); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Kafka.Brokers...),
		kgo.ClientID(clientID(cfg)),
		kgo.RecordPartitioner(kafka.Partitioner()),
		kafka.CompressionOpt(cfg.Kafka.Compression),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.TransactionalID(cfg.TransactionalID),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(topics.Orders),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MaxBufferedRecords(maxBufferedRecords),
		kgo.MetadataMaxAge(cfg.MetadataMaxAge),
		kgo.MetadataMinAge(min(cfg.MetadataMaxAge, metadataMinAge)),
		kgo.OnPartitionsAssigned(l.assigned),
		kgo.OnPartitionsRevoked(l.revoked),
		kgo.OnPartitionsLost(l.revoked),
		// A fetch that finds nothing waits at most this long for records:
		// with the embedded broker, the first fetch after a crashed
		// incarnation's transaction was aborted could wait the whole
		// default 5 s although records were there.
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if cfg.StaticMember {
		opts = append(opts, kgo.InstanceID(cfg.TransactionalID))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return nil, fmt.Errorf("matcher: new transact session: %w", err)
	}
	l.sess = sess
	l.lag.ListWith(sess.Client())
	return l, nil
}

func clientID(cfg Config) string {
	if cfg.Kafka.ClientID != "" {
		return cfg.Kafka.ClientID
	}
	return "matcher"
}

// assigned and revoked keep Stats.Assigned and the lag's partitions; they
// run on the client's goroutine and touch only the atomic counter and the
// lag, which has its own lock.
func (l *Loop) assigned(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	l.stats.Assigned.Add(int64(len(ps[topics.Orders])))
}

func (l *Loop) revoked(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	l.stats.Assigned.Add(-int64(len(ps[topics.Orders])))
	l.lag.Revoke(ps)
}

// Stats returns the loop's counters.
func (l *Loop) Stats() *Stats { return &l.stats }

// Lag returns the consumer's lag metrics, to register.
func (l *Loop) Lag() *kafka.Lag { return l.lag }

// Ping checks that a broker answers, for readiness.
func (l *Loop) Ping(ctx context.Context) error { return kafka.Ping(ctx, l.sess.Client()) }

// Run processes batches until ctx ends or the session fails. The batch in
// progress when ctx ends is finished and committed.
func (l *Loop) Run(ctx context.Context) error {
	// Take the transactional id before anything else: that aborts what a
	// previous incarnation of this instance left open. Its pending offset
	// commit would otherwise hold the group's offset fetch (which must see
	// stable offsets) until the broker timed the transaction out, 40
	// seconds after a crash.
	if !l.initProducerID(ctx) {
		return nil
	}
	for ctx.Err() == nil {
		fetches := l.sess.PollRecords(ctx, l.cfg.MaxPollRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		var fenced error
		fetches.EachError(func(topic string, p int32, err error) {
			if isFenced(err) {
				fenced = err
				return
			}
			l.log.Warn("matcher: fetch", "topic", topic, "partition", p, "err", err)
		})
		if fenced != nil {
			return fmt.Errorf("another instance runs as %s: %w", l.cfg.TransactionalID, fenced)
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		work, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
		err := l.transact(work, fetches)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// isFenced reports whether err says that another instance took this
// instance's transactional id or its static group membership. A fenced
// instance can commit nothing more; going on, it would only take the
// membership back from its replacement (the group gives a static member's
// partitions to whichever process joined last) and hold partitions it
// cannot serve, so Run ends.
func isFenced(err error) bool {
	return errors.Is(err, kerr.FencedInstanceID) || errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// initProducerID takes the transactional id, trying again every second
// while the brokers cannot be reached (as the consumer does); false when
// ctx ended first.
func (l *Loop) initProducerID(ctx context.Context) bool {
	for {
		_, _, err := l.sess.Client().ProducerID(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.log.Warn("matcher: take the transactional id; trying again", "transactional_id", l.cfg.TransactionalID, "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

// Close leaves the group without committing anything further. A
// transaction left open is aborted when this instance's transactional id
// starts again, or by the broker's transaction timeout.
func (l *Loop) Close() { l.sess.Close() }

// transact applies one batch and produces its outputs in a transaction
// with the batch's offsets.
func (l *Loop) transact(ctx context.Context, fetches kgo.Fetches) error {
	if err := l.sess.Begin(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	var produced producedErr
	works, err := l.prepare(ctx, fetches)
	if err != nil {
		return err
	}
	if err := l.processAll(ctx, works, &produced); err != nil {
		return err
	}
	if l.beforeEnd != nil {
		if err := l.beforeEnd(); err != nil {
			return err
		}
	}
	try := kgo.TryCommit
	if produced.get() != nil {
		try = kgo.TryAbort
	}
	committed, err := l.sess.End(ctx, try)
	if err != nil {
		return fmt.Errorf("end transaction: %w", errors.Join(err, produced.get()))
	}
	defer l.countBooks()
	if committed {
		l.stats.Committed.Add(int64(fetches.NumRecords()))
		l.lag.Applied(fetches.Records())
	} else {
		// The group rewinds to the last committed offsets; every engine
		// has applied records it will see again.
		l.stats.Aborts.Add(1)
		clear(l.parts)
		l.log.Warn("matcher: transaction aborted; engines rebuild from the log", "produce_err", produced.get())
	}
	return nil
}

// countBooks stores the books and resting orders of every engine in
// Stats, for the gauges; scrapes read them from any goroutine.
func (l *Loop) countBooks() {
	var books, resting int
	for _, p := range l.parts {
		b, r := p.engine.Books()
		books += b
		resting += r
	}
	l.stats.Books.Store(int64(books))
	l.stats.Resting.Store(int64(resting))
}

// work is the records of one partition in a batch, with its engine.
type work struct {
	part    *partition
	records []*kgo.Record
	index   int
}

// prepare groups the batch by partition, in the order fetched, and brings
// each partition's engine up to its first record.
func (l *Loop) prepare(ctx context.Context, fetches kgo.Fetches) ([]work, error) {
	var works []work
	var firsts []int64
	at := make(map[int32]int)
	var stale []int32
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		if i, ok := at[p.Partition]; ok {
			works[i].records = append(slices.Clip(works[i].records), p.Records...)
			return
		}
		at[p.Partition] = len(works)
		works = append(works, work{records: p.Records})
		firsts = append(firsts, p.Records[0].Offset)
		if l.stale(p.Partition, p.Records[0].Offset) {
			stale = append(stale, p.Partition)
		}
	})
	snaps, err := readSnapshots(ctx, l.cfg.Kafka, l.log, stale)
	if err != nil {
		return nil, err
	}
	for i := range works {
		if works[i].part, err = l.ready(ctx, works[i].records[0].Partition, firsts[i], snaps); err != nil {
			return nil, err
		}
	}
	return works, nil
}

// processAll applies the partitions of a batch on up to cfg.Workers
// goroutines. A partition is processed by one goroutine in offset order,
// and its outputs are produced in that order, so each partition's output
// is the same whatever the concurrency; partitions share nothing but the
// session (safe for concurrent use) and atomic counters.
func (l *Loop) processAll(ctx context.Context, works []work, produced *producedErr) error {
	workers := min(l.cfg.Workers, len(works))
	if workers <= 1 {
		for _, w := range works {
			if err := l.process(ctx, w, produced); err != nil {
				return err
			}
		}
		return nil
	}
	next := make(chan work)
	errs := make([]error, len(works))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for w := range next {
				errs[w.index] = l.process(ctx, w, produced)
			}
		})
	}
	for i, w := range works {
		w.index = i
		next <- w
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// process applies the records of one partition in offset order, produces
// their outputs and, when it is due, a snapshot round.
func (l *Loop) process(ctx context.Context, w work, produced *producedErr) error {
	part := w.part
	var outputs int64
	for _, r := range w.records {
		outs := l.apply(part, r)
		recs := make([]kgo.Record, len(outs))
		for i, o := range outs {
			rec := &recs[i]
			part.outputRecord(rec, o, r.Partition)
			l.sess.Produce(ctx, rec, produced.record)
		}
		outputs += int64(len(outs))
	}
	l.stats.Records.Add(int64(len(w.records)))
	l.stats.Outputs.Add(outputs)
	part.sinceSnapshot += len(w.records)
	if l.cfg.SnapshotEvery > 0 && part.sinceSnapshot >= l.cfg.SnapshotEvery {
		return l.snapshot(ctx, part, w.records[0].Partition, produced)
	}
	return nil
}

// apply decodes and applies one record. A record that cannot be
// interpreted is logged and skipped: it would fail the same way on every
// replay, so retrying it would only stop the partition.
func (l *Loop) apply(part *partition, r *kgo.Record) []engine.Output {
	part.next = r.Offset + 1
	part.lastTime = r.Timestamp.UnixMilli()
	if l.outputsOf != nil {
		return l.outputsOf(r)
	}
	outs, err := part.engine.ApplyRecord(r.Value)
	if err == nil {
		return outs
	}
	l.stats.Skipped.Add(1)
	l.log.Warn("matcher: skipping record", "partition", r.Partition, "offset", r.Offset, "err", err)
	return nil
}

// producedErr keeps the first produce error of a transaction; promises run
// on the client's goroutines.
type producedErr struct {
	mu  sync.Mutex
	err error
}

func (p *producedErr) record(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *producedErr) get() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
