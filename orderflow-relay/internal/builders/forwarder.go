package builders

import (
	"context"
	"encoding/json"
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

// Forwarder records and forwards orderflow.
type Forwarder struct {
	pool     *pgxpool.Pool
	builders []Client
	producer of.Producer
	log      *slog.Logger
	// Parallel bounds the bundles sent to builders at once (32).
	Parallel int
}

// NewForwarder returns a forwarder to builders.
func NewForwarder(pool *pgxpool.Pool, builders []Client, producer of.Producer, log *slog.Logger) *Forwarder {
	return &Forwarder{pool: pool, builders: builders, producer: producer, log: log, Parallel: 32}
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
		if len(recs) == 0 {
			continue
		}
		for {
			err := f.handle(ctx, recs)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			f.log.Error("forward orderflow; retrying", "error", err)
			time.Sleep(time.Second)
		}
		if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
			f.log.Warn("commit forwarder offsets", "error", err)
		}
	}
}

// job is one bundle to send to builders after its rows are stored.
type job struct {
	bundleHash string // "" for a lone transaction
	bundle     Bundle
	cancelUUID string
}

func (f *Forwarder) handle(ctx context.Context, recs []*kgo.Record) error {
	var jobs []job
	batch := &pgx.Batch{}
	for _, r := range recs {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			f.log.Warn("skip bad orderflow record", "error", err)
			continue
		}
		j, err := f.plan(ctx, e, batch)
		if err != nil {
			f.log.Warn("skip orderflow record", "type", e.Type, "id", e.ID, "error", err)
			continue
		}
		if j != nil {
			jobs = append(jobs, *j)
		}
	}
	if batch.Len() > 0 {
		if err := f.pool.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("store orderflow: %w", err)
		}
	}
	f.forward(ctx, jobs)
	return nil
}

// plan queues the rows of one record and returns what to send builders.
func (f *Forwarder) plan(ctx context.Context, e topics.Envelope, batch *pgx.Batch) (*job, error) {
	switch e.Type {
	case topics.TypeOrderflowTx:
		var m topics.OrderflowTx
		if err := e.UnmarshalData(&m); err != nil {
			return nil, err
		}
		queueTx(batch, m.Hash, m.Raw, m.Tx, m.Originator, m.Method, m.Refund, "", m.ReceivedAt)
		return &job{bundle: Bundle{Txs: []string{m.Raw}, RefundPercent: m.Refund.Percent, RefundRecipient: m.Refund.Recipient}}, nil
	case topics.TypeOrderflowOriginatorBundle:
		var m topics.OrderflowOriginatorBundle
		if err := e.UnmarshalData(&m); err != nil {
			return nil, err
		}
		b := Bundle{BlockNumber: m.Terms.BlockNumber, MinTimestamp: m.Terms.MinTimestamp, MaxTimestamp: m.Terms.MaxTimestamp,
			RevertingTxHashes: m.Terms.RevertingTxHashes, ReplacementUUID: m.ReplacementUUID,
			RefundPercent: m.Refund.Percent, RefundRecipient: m.Refund.Recipient}
		var hashes []string
		for _, t := range m.Txs {
			queueTx(batch, t.Hash, t.Raw, *t.Tx, m.Originator, "eth_sendBundle", m.Refund, m.BundleHash, m.ReceivedAt)
			b.Txs = append(b.Txs, t.Raw)
			hashes = append(hashes, strings.ToLower(t.Hash))
		}
		queueBundle(batch, m.BundleHash, "originator", m.Originator, m.ReplacementUUID, "", hashes, m.ReceivedAt)
		return &job{bundleHash: m.BundleHash, bundle: b}, nil
	case topics.TypeOrderflowSearcherBundle:
		var m topics.OrderflowSearcherBundle
		if err := e.UnmarshalData(&m); err != nil {
			return nil, err
		}
		return f.planSearcher(ctx, m, batch)
	}
	return nil, nil
}

func (f *Forwarder) planSearcher(ctx context.Context, m topics.OrderflowSearcherBundle, batch *pgx.Batch) (*job, error) {
	if m.Cancel {
		batch.Queue(`UPDATE orderflow_bundles SET status = 'CANCELLED', updated_at = now()
			WHERE owner = $1 AND replacement_uuid = $2 AND status IN ('RECEIVED', 'FORWARDED')`, m.Searcher, m.ReplacementUUID)
		return &job{cancelUUID: m.ReplacementUUID}, nil
	}
	b := Bundle{BlockNumber: m.Terms.BlockNumber, MinTimestamp: m.Terms.MinTimestamp, MaxTimestamp: m.Terms.MaxTimestamp,
		RevertingTxHashes: m.Terms.RevertingTxHashes, ReplacementUUID: m.ReplacementUUID}
	var hashes []string
	for i, t := range m.Txs {
		hashes = append(hashes, strings.ToLower(t.Hash))
		if i == 0 && m.BackrunOf != "" {
			raw, refund, err := f.originatorTx(ctx, m.BackrunOf)
			if err != nil {
				return nil, err
			}
			b.Txs = append(b.Txs, raw)
			b.RefundPercent, b.RefundRecipient = refund.Percent, refund.Recipient
			continue
		}
		b.Txs = append(b.Txs, t.Raw)
	}
	if m.ReplacementUUID != "" {
		// Latest wins: versions of a group share a partition, so this
		// record is newer than every version already stored.
		batch.Queue(`UPDATE orderflow_bundles SET status = 'REPLACED', updated_at = now()
			WHERE owner = $1 AND replacement_uuid = $2 AND bundle_hash <> $3 AND status IN ('RECEIVED', 'FORWARDED')`,
			m.Searcher, m.ReplacementUUID, m.BundleHash)
	}
	queueBundle(batch, m.BundleHash, "searcher", m.Searcher, m.ReplacementUUID, strings.ToLower(m.BackrunOf), hashes, m.ReceivedAt)
	return &job{bundleHash: m.BundleHash, bundle: b}, nil
}

// errNoOriginatorTx is a backrun of a hash the relay never received.
var errNoOriginatorTx = errors.New("backrun of an unknown originator transaction")

// originatorTx finds the signed transaction a backrun starts with. It
// waits up to a second: the transaction's own record may be stored by
// another instance a moment later.
func (f *Forwarder) originatorTx(ctx context.Context, hash string) (string, topics.RefundPolicy, error) {
	var raw string
	var p topics.RefundPolicy
	for i := 0; i < 20; i++ {
		err := f.pool.QueryRow(ctx, `SELECT raw, refund_recipient, refund_percent FROM orderflow_txs WHERE hash = $1`,
			strings.ToLower(hash)).Scan(&raw, &p.Recipient, &p.Percent)
		if err == nil {
			return raw, p, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return "", p, err
		}
		select {
		case <-ctx.Done():
			return "", p, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return "", p, fmt.Errorf("%w %s", errNoOriginatorTx, hash)
}

func queueTx(batch *pgx.Batch, hash, raw string, d topics.DecodedTx, originator, method string, refund topics.RefundPolicy, bundle string, receivedAt int64) {
	decoded, _ := json.Marshal(d)
	var bundleHash *string
	if bundle != "" {
		bundleHash = &bundle
	}
	batch.Queue(`INSERT INTO orderflow_txs (hash, originator, sender, raw, decoded, method, refund_recipient, refund_percent, bundle_hash, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (hash) DO NOTHING`,
		strings.ToLower(hash), originator, d.From, raw, decoded, method, refund.Recipient, refund.Percent, bundleHash, time.Unix(0, receivedAt))
}

func queueBundle(batch *pgx.Batch, hash, kind, owner, uuid, backrunOf string, txHashes []string, receivedAt int64) {
	batch.Queue(`INSERT INTO orderflow_bundles (bundle_hash, kind, owner, replacement_uuid, backrun_of, tx_hashes, status, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, 'RECEIVED', $7) ON CONFLICT (bundle_hash) DO NOTHING`,
		strings.ToLower(hash), kind, owner, uuid, backrunOf, txHashes, time.Unix(0, receivedAt))
}

// forward sends the jobs to every builder, Parallel at a time, and records
// the outcome of each bundle.
func (f *Forwarder) forward(ctx context.Context, jobs []job) {
	if len(f.builders) == 0 || len(jobs) == 0 {
		return
	}
	sem := make(chan struct{}, max(f.Parallel, 1))
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f.forwardOne(ctx, j)
		})
	}
	wg.Wait()
}

func (f *Forwarder) forwardOne(ctx context.Context, j job) {
	if j.cancelUUID != "" {
		for _, b := range f.builders {
			if err := b.CancelBundle(ctx, j.cancelUUID); err != nil {
				f.log.Warn("cancel at builder", "builder", b.URL, "error", err)
			}
		}
		return
	}
	var sentTo []string
	for _, b := range f.builders {
		if _, err := b.SendBundle(ctx, j.bundle); err != nil {
			f.log.Warn("send bundle to builder", "builder", b.URL, "error", err)
			continue
		}
		sentTo = append(sentTo, b.URL)
	}
	if j.bundleHash == "" || len(sentTo) == 0 {
		return
	}
	builderHash := BuilderHash(j.bundle.Txs)
	tag, err := f.pool.Exec(ctx, `UPDATE orderflow_bundles SET status = 'FORWARDED', builder_bundle_hash = $2, builders = $3, updated_at = now()
		WHERE bundle_hash = $1 AND status = 'RECEIVED'`, strings.ToLower(j.bundleHash), builderHash, sentTo)
	if err != nil {
		f.log.Warn("record forwarded bundle", "error", err)
		return
	}
	if tag.RowsAffected() == 0 {
		return
	}
	st := topics.OrderflowBundleStatus{BundleHash: j.bundleHash, Status: topics.BundleForwarded, BuilderBundleHash: builderHash,
		Builders: sentTo, At: time.Now().UnixMilli()}
	if err := of.Publish(ctx, f.producer, topics.OrderflowLifecycle, topics.TypeOrderflowBundleStatus,
		"bs-"+j.bundleHash+"-"+st.Status, j.bundleHash, st); err != nil {
		f.log.Warn("publish bundle status", "error", err)
	}
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
