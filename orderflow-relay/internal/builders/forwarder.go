package builders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// DefaultGroup is the consumer group of the forwarders unless Config.Group
// names another: each record is forwarded by one member of the group.
const DefaultGroup = "orderflow-relay-builders"

// ClientOpts are the consumer options of the forwarder's Kafka client.
// Rebalances wait until Run has committed what it forwarded (Run allows
// them between polls), and tell f which partitions of orderflow-bundles
// it was given or lost, so that one member at a time forwards a
// partition's bundles.
func (f *Forwarder) ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(topics.OrderflowTxs, topics.OrderflowBundles),
		kgo.ConsumerGroup(f.cfg.Group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(f.rebalanced(true)),
		kgo.OnPartitionsRevoked(f.rebalanced(false)),
		kgo.OnPartitionsLost(f.rebalanced(false)),
	}
}

// Config tunes the forwarder.
type Config struct {
	// Parallel bounds the requests to builders in flight at once (32).
	Parallel int
	// Batch is how many bundles go to a builder in one JSON-RPC batch
	// request (BUILDER_BATCH); 1 sends one eth_sendBundle per request, for
	// builders that do not take batches (1).
	Batch int
	// BackrunWait is how long a backrun whose originator transaction is
	// not stored yet waits for it before it fails (10s). The transaction
	// is in the log before any searcher saw it, but another relay instance
	// may consume its partition.
	BackrunWait time.Duration
	// RetryFor (BUILDER_RETRY) is how long a send that a builder refused
	// or did not answer is tried again at that builder, after 250ms, then
	// twice as long each time up to 4s, and never past the bundle's
	// maxTimestamp (24s, two slots). A bundle no builder accepted by then
	// becomes FAILED.
	RetryFor time.Duration
	// Group is the consumer group of the relay instances that forward
	// (ORDERFLOW_RELAY_GROUP, DefaultGroup).
	Group string
	// Metrics counts the sends by outcome; nil counts nothing.
	Metrics *Metrics
}

// Defaults of Config.
const (
	DefaultParallel    = 32
	DefaultBatch       = 1
	DefaultBackrunWait = 10 * time.Second
	DefaultRetryFor    = 24 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.BackrunWait <= 0 {
		c.BackrunWait = DefaultBackrunWait
	}
	if c.RetryFor <= 0 {
		c.RetryFor = DefaultRetryFor
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	return c
}

// Forwarder records and forwards orderflow. One goroutine runs it (Run,
// or Handle in tests); waiting, adopted and retries are only touched
// there.
type Forwarder struct {
	cfg      Config
	pool     *pgxpool.Pool
	builders []Client
	out      *outbox.Outbox // nil: status events are neither kept nor published
	log      *slog.Logger
	now      func() time.Time
	// waiting are stored backruns whose originator transaction was not
	// known yet, oldest first.
	waiting []*pending
	// adopted are the bundles taken over with partitions assigned since
	// the last Handle, in log order.
	adopted []action
	// retries are the sends a builder failed, to try again.
	retries []*retry

	// mu guards changes and wake: the rebalance callbacks run on the Kafka
	// client's goroutines while Run waits for records, never while it
	// handles them (BlockRebalanceOnPoll).
	mu      sync.Mutex
	changes []change
	wake    context.CancelFunc // ends the poll Run waits in
}

// Group is the consumer group the forwarder's client joins.
func (f *Forwarder) Group() string { return f.cfg.Group }

// NewForwarder returns a forwarder to the builders at urls that keeps the
// bundle status events it decides in out; with out nil it keeps and
// publishes none.
func NewForwarder(cfg Config, pool *pgxpool.Pool, urls []string, out *outbox.Outbox, log *slog.Logger) *Forwarder {
	cfg = cfg.withDefaults()
	hc := NewHTTPClient(cfg.Parallel)
	clients := make([]Client, 0, len(urls))
	for _, u := range urls {
		clients = append(clients, Client{URL: u, HTTP: hc})
	}
	return &Forwarder{cfg: cfg, pool: pool, builders: clients, out: out, log: log, now: time.Now}
}

// Run consumes with cl (built with f.ClientOpts) until ctx ends. Offsets
// are committed after a poll's records are stored and forwarded: a crash
// in between forwards that poll again, which builders and the idempotent
// inserts absorb. What waits past the commit (backruns, retries) is in
// Postgres, and the next owner of its partition takes it over.
func (f *Forwarder) Run(ctx context.Context, cl *kgo.Client) error {
	defer cl.AllowRebalance()
	for {
		fetches := f.poll(ctx, cl)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				f.log.Warn("forwarder fetch", "topic", t, "partition", p, "error", err)
			}
		})
		recs := fetches.Records()
		if len(recs) > 0 || f.busy() {
			if !f.handleUntilDone(ctx, recs) {
				return nil
			}
			f.commit(ctx, cl, recs)
		}
		cl.AllowRebalance()
	}
}

// poll waits for records, and no longer than until a waiting backrun or a
// retry is due, or a rebalance callback left partitions to Handle.
func (f *Forwarder) poll(ctx context.Context, cl *kgo.Client) kgo.Fetches {
	var pctx context.Context
	var cancel context.CancelFunc
	if d, ok := f.idleFor(); ok {
		pctx, cancel = context.WithTimeout(ctx, d)
	} else {
		pctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	f.mu.Lock()
	f.wake = cancel
	if len(f.changes) > 0 {
		cancel()
	}
	f.mu.Unlock()
	fetches := cl.PollFetches(pctx)
	f.mu.Lock()
	f.wake = nil
	f.mu.Unlock()
	return fetches
}

// resolveEvery is how often waiting backruns look for their transaction
// in Postgres, which another relay instance may have stored, when no
// records arrive.
const resolveEvery = 100 * time.Millisecond

// idleFor is how long Run may wait for records; false when only records
// (or a rebalance) can give it work.
func (f *Forwarder) idleFor() (time.Duration, bool) {
	if len(f.adopted) > 0 {
		return 0, true
	}
	var next time.Time
	if len(f.waiting) > 0 {
		next = f.now().Add(resolveEvery)
	}
	for _, r := range f.retries {
		if next.IsZero() || r.due.Before(next) {
			next = r.due
		}
	}
	if next.IsZero() {
		return 0, false
	}
	return next.Sub(f.now()), true
}

// busy reports work left without new records.
func (f *Forwarder) busy() bool {
	if len(f.waiting)+len(f.adopted)+len(f.retries) > 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.changes) > 0
}

// handleUntilDone runs Handle until it succeeds, or until ctx ends
// (false).
func (f *Forwarder) handleUntilDone(ctx context.Context, recs []*kgo.Record) bool {
	for {
		err := f.Handle(ctx, recs)
		if err == nil {
			return true
		}
		f.log.Error("forward orderflow; retrying in 1s", "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

// commit commits the offsets of recs, also when ctx ended while they were
// forwarded: they are done, and the next owner must not forward them again.
func (f *Forwarder) commit(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) {
	if len(recs) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := cl.CommitRecords(cctx, recs...); err != nil {
		f.log.Warn("commit forwarder offsets", "error", err)
	}
}

// Handle takes over the bundles of newly assigned partitions, stores one
// poll's records in Postgres in one transaction and forwards them, with
// the retries that are due. An error means nothing was stored; the caller
// retries the same records. The sends of a stored poll finish even when
// ctx ends meanwhile, so that what is committed was forwarded.
func (f *Forwarder) Handle(ctx context.Context, recs []*kgo.Record) error {
	if err := f.applyChanges(ctx); err != nil {
		return err
	}
	p := newPlan(f.now(), f.cfg.BackrunWait)
	for _, r := range recs {
		rec, err := decodeRecord(r)
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			f.log.Warn("skip orderflow record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
			continue
		}
		rec.src = source{topic: r.Topic, partition: r.Partition, offset: r.Offset}
		p.add(rec)
	}
	p.carry(f.waiting, f.adopted)
	if err := f.resolve(ctx, p); err != nil {
		return err
	}
	p.finish()
	if err := f.store(ctx, p); err != nil {
		return err
	}
	f.waiting, f.adopted = p.waiting, nil
	jobs := p.jobs()
	f.forward(context.WithoutCancel(ctx), jobs, f.takeDue(p.now, jobs))
	return nil
}

// resolve looks up the originator transactions of the backruns that this
// poll does not carry itself, in one query.
func (f *Forwarder) resolve(ctx context.Context, p *plan) error {
	missing := p.missing()
	if len(missing) == 0 {
		return nil
	}
	rows, err := f.pool.Query(ctx, `SELECT hash, raw, refund_recipient, refund_percent FROM orderflow_txs WHERE hash = ANY($1)`, missing)
	if err != nil {
		return fmt.Errorf("look up backrun transactions: %w", err)
	}
	var hash string
	var o origin
	_, err = pgx.ForEachRow(rows, []any{&hash, &o.raw, &o.refund.Recipient, &o.refund.Percent}, func() error {
		p.origins[hash] = o
		return nil
	})
	if err != nil {
		return fmt.Errorf("look up backrun transactions: %w", err)
	}
	return nil
}

// store writes the poll in one Postgres transaction (a pipelined batch):
// the transactions in one statement, then bundles, replacements and
// cancellations in log order, then the backruns that waited too long;
// with them, in the outbox, the status events of the bundles replaced,
// cancelled or failed, published once it committed.
func (f *Forwarder) store(ctx context.Context, p *plan) error {
	b := &pgx.Batch{}
	p.queue(b)
	if b.Len() == 0 {
		return nil
	}
	var kept []outbox.Pending
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		var err error
		kept, err = f.keep(ctx, tx, p.changed)
		return err
	})
	if err != nil {
		return fmt.Errorf("store orderflow: %w", err)
	}
	if len(kept) > 0 {
		f.out.Publish(ctx, kept)
	}
	return nil
}

// statusRecord is the orderflow-lifecycle record of a status event with
// the envelope id id.
func statusRecord(id string, st topics.OrderflowBundleStatus) (*kgo.Record, error) {
	e, err := topics.NewEnvelope(topics.TypeOrderflowBundleStatus, topics.OrderflowVersion, id, time.UnixMilli(st.At), st)
	if err != nil {
		return nil, err
	}
	return kafka.NewRecord(topics.OrderflowLifecycle, []byte(st.BundleHash), e)
}

// BuilderHash is the bundle hash builders compute for the transactions
// actually sent: keccak256 of the concatenated transaction hashes.
func BuilderHash(raws []string) string {
	var cat []byte
	for _, r := range raws {
		b, err := of.DecodeHex(r)
		if err != nil {
			continue
		}
		tx := new(types.Transaction)
		if tx.UnmarshalBinary(b) == nil {
			cat = append(cat, tx.Hash().Bytes()...)
		}
	}
	return common.BytesToHash(crypto.Keccak256(cat)).Hex()
}

// lower is the stored form of hashes and addresses.
func lower(s string) string { return strings.ToLower(s) }
