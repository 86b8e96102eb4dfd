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
	"blockspace.exchange/topics"
)

// Group is the consumer group of the forwarders: each record is forwarded
// by one relay instance.
const Group = "orderflow-relay-builders"

// ClientOpts are the consumer options of the forwarder's Kafka client.
func ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(topics.OrderflowTxs, topics.OrderflowBundles),
		kgo.ConsumerGroup(Group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
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
}

func (c Config) withDefaults() Config {
	if c.Parallel <= 0 {
		c.Parallel = 32
	}
	if c.Batch <= 0 {
		c.Batch = 1
	}
	if c.BackrunWait <= 0 {
		c.BackrunWait = 10 * time.Second
	}
	return c
}

// Forwarder records and forwards orderflow. One goroutine runs it (Run);
// waiting is only touched there.
type Forwarder struct {
	cfg      Config
	pool     *pgxpool.Pool
	builders []Client
	producer of.Producer
	log      *slog.Logger
	now      func() time.Time
	// waiting are stored backruns whose originator transaction was not
	// known yet, oldest first.
	waiting []*pending
}

// NewForwarder returns a forwarder to the builders at urls.
func NewForwarder(cfg Config, pool *pgxpool.Pool, urls []string, producer of.Producer, log *slog.Logger) *Forwarder {
	cfg = cfg.withDefaults()
	hc := NewHTTPClient(cfg.Parallel)
	clients := make([]Client, 0, len(urls))
	for _, u := range urls {
		clients = append(clients, Client{URL: u, HTTP: hc})
	}
	return &Forwarder{cfg: cfg, pool: pool, builders: clients, producer: producer, log: log, now: time.Now}
}

// Run consumes with cl (built with ClientOpts) until ctx ends. Offsets
// are committed after a poll's records are stored and forwarded: a crash
// forwards some again, which builders and the idempotent inserts absorb.
func (f *Forwarder) Run(ctx context.Context, cl *kgo.Client) error {
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			f.log.Warn("forwarder fetch", "topic", t, "partition", p, "error", err)
		})
		recs := fetches.Records()
		if len(recs) == 0 && len(f.waiting) == 0 {
			continue
		}
		for {
			err := f.Handle(ctx, recs)
			if err == nil {
				break
			}
			f.log.Error("forward orderflow; retrying in 1s", "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
		if len(recs) > 0 {
			if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
				f.log.Warn("commit forwarder offsets", "error", err)
			}
		}
	}
}

// Handle stores one poll's records in Postgres in one transaction and
// forwards them. An error means nothing was stored; the caller retries
// the same records.
func (f *Forwarder) Handle(ctx context.Context, recs []*kgo.Record) error {
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
		p.add(rec)
	}
	p.carry(f.waiting)
	if err := f.resolve(ctx, p); err != nil {
		return err
	}
	p.finish()
	if err := f.store(ctx, p); err != nil {
		return err
	}
	f.waiting = p.waiting
	f.forward(ctx, p.jobs())
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
// cancellations in log order, then the backruns that waited too long.
func (f *Forwarder) store(ctx context.Context, p *plan) error {
	b := &pgx.Batch{}
	p.queue(b)
	if b.Len() == 0 {
		return nil
	}
	if err := f.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store orderflow: %w", err)
	}
	return nil
}

// forward sends the jobs to every builder: cancellations one by one,
// bundles in batches of cfg.Batch, at most cfg.Parallel requests at once;
// then it records which bundles reached a builder.
func (f *Forwarder) forward(ctx context.Context, jobs []*job) {
	if len(f.builders) == 0 || len(jobs) == 0 {
		return
	}
	var sends []*job
	sem := make(chan struct{}, f.cfg.Parallel)
	var wg sync.WaitGroup
	run := func(fn func()) {
		sem <- struct{}{}
		wg.Go(func() { defer func() { <-sem }(); fn() })
	}
	for _, j := range jobs {
		if j.cancelUUID == "" {
			sends = append(sends, j)
			continue
		}
		for _, b := range f.builders {
			run(func() {
				if err := b.CancelBundle(ctx, j.cancelUUID); err != nil {
					f.log.Warn("cancel at builder", "builder", b.URL, "error", err)
				}
			})
		}
	}
	var mu sync.Mutex // guards sentTo of the jobs
	for start := 0; start < len(sends); start += f.cfg.Batch {
		chunk := sends[start:min(start+f.cfg.Batch, len(sends))]
		bundles := make([]Bundle, len(chunk))
		for i, j := range chunk {
			bundles[i] = j.bundle
		}
		for _, b := range f.builders {
			run(func() {
				errs := b.SendBundles(ctx, bundles)
				mu.Lock()
				defer mu.Unlock()
				for i, err := range errs {
					if err != nil {
						f.log.Warn("send bundle to builder", "builder", b.URL, "error", err)
						continue
					}
					chunk[i].sentTo = append(chunk[i].sentTo, b.URL)
				}
			})
		}
	}
	wg.Wait()
	f.recordForwarded(ctx, sends)
}

// recordForwarded marks the bundles that reached a builder FORWARDED and
// publishes their status. A bundle replaced or cancelled meanwhile keeps
// that state.
func (f *Forwarder) recordForwarded(ctx context.Context, sends []*job) {
	var done []*job
	b := &pgx.Batch{}
	for _, j := range sends {
		if j.bundleHash == "" || len(j.sentTo) == 0 {
			continue
		}
		j.builderHash = BuilderHash(j.bundle.Txs)
		b.Queue(`UPDATE orderflow_bundles SET status = 'FORWARDED', builder_bundle_hash = $2, builders = $3, updated_at = now()
			WHERE bundle_hash = $1 AND status = 'RECEIVED'`, j.bundleHash, j.builderHash, j.sentTo)
		done = append(done, j)
	}
	if len(done) == 0 {
		return
	}
	br := f.pool.SendBatch(ctx, b)
	var recs []*kgo.Record
	for _, j := range done {
		tag, err := br.Exec()
		if err != nil {
			f.log.Warn("record forwarded bundle", "error", err)
			break
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		st := topics.OrderflowBundleStatus{BundleHash: j.bundleHash, Status: topics.BundleForwarded,
			BuilderBundleHash: j.builderHash, Builders: j.sentTo, At: f.now().UnixMilli()}
		if r, err := statusRecord(st); err == nil {
			recs = append(recs, r)
		}
	}
	_ = br.Close()
	if len(recs) > 0 {
		if err := f.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			f.log.Warn("publish bundle status", "error", err)
		}
	}
}

func statusRecord(st topics.OrderflowBundleStatus) (*kgo.Record, error) {
	e, err := topics.NewEnvelope(topics.TypeOrderflowBundleStatus, topics.OrderflowVersion, "bs-"+st.BundleHash+"-"+st.Status, time.UnixMilli(st.At), st)
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
