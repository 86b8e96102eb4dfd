// Package inclusions learns from the chain what happened to private
// orderflow: it marks transactions and bundles INCLUDED when they appear
// in a block, turns an included backrun's payment into the originator's
// refund liability, pays refunds on chain, and confirms the payouts.
//
// Blocks are applied one at a time, each in one Postgres transaction that
// also moves the watcher's cursor (orderflow_chain_blocks), so a restarted
// relay resumes after the last applied block however long it was down. A
// block whose parent is not the stored one reveals a reorganisation: what
// the orphaned blocks changed is undone, and a refund learned from them
// that is not paid yet is withdrawn. Refunds are paid only once their
// block has RefundConfirmations blocks on top of it, with payouts signed
// and stored before they are sent (payout.go).
package inclusions

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// ErrDeepReorg means no block the watcher keeps is canonical any more:
// the chain was reorganised deeper than its history, or it is another
// chain. The watcher stops for an operator.
var ErrDeepReorg = errors.New("no stored block is canonical")

// DefaultPoll is how often the chain head is read when Config.Poll is 0.
const DefaultPoll = 250 * time.Millisecond

// Chain is what the watcher needs of an Ethereum node; ethclient.Client
// and go-ethereum's simulated client both satisfy it.
type Chain interface {
	BlockNumber(ctx context.Context) (uint64, error)
	BlockByNumber(ctx context.Context, number *big.Int) (*types.Block, error)
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	NonceAt(ctx context.Context, account common.Address, block *big.Int) (uint64, error)
	SuggestGasTipCap(ctx context.Context) (*big.Int, error)
	EstimateGas(ctx context.Context, call ethereum.CallMsg) (uint64, error)
	SendTransaction(ctx context.Context, tx *types.Transaction) error
}

// Config tunes the watcher.
type Config struct {
	ChainID *big.Int
	Poll    time.Duration // how often the head is read (250ms)
	// PendingTTL is how long a transaction may stay PENDING before it is
	// marked FAILED (10m).
	PendingTTL time.Duration
	// PayerKey signs refund payouts; nil leaves refunds PENDING.
	PayerKey *ecdsa.PrivateKey
	// RefundConfirmations is how many blocks must follow the block of a
	// backrun before its refund is paid; 0 pays at once.
	RefundConfirmations uint64
	// Resend is how long a sent payout waits for a block before it is
	// sent again (30s).
	Resend time.Duration
	// Metrics records the head, the cursor, the polls and the payouts;
	// nil records nothing.
	Metrics *Metrics
}

const (
	// history is how many applied blocks are kept for finding where a
	// reorganisation forked.
	history = 256
	// firstLookback is how far behind the head a watcher with no cursor
	// starts: more than PendingTTL's worth of 12-second blocks.
	firstLookback = 64
	// blocksPerStep bounds one step, so that a relay catching up after an
	// outage still pays and expires between steps.
	blocksPerStep = 512
)

// Watcher follows the chain head.
type Watcher struct {
	cfg   Config
	chain Chain
	pool  *pgxpool.Pool
	out   *outbox.Outbox // nil: events are neither kept nor published
	log   *slog.Logger
}

// New returns a watcher.
func New(cfg Config, chain Chain, pool *pgxpool.Pool, out *outbox.Outbox, log *slog.Logger) *Watcher {
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = 10 * time.Minute
	}
	if cfg.Resend <= 0 {
		cfg.Resend = 30 * time.Second
	}
	return &Watcher{cfg: cfg, chain: chain, pool: pool, out: out, log: log}
}

// Run steps every Poll until ctx ends. Errors are retried at the next
// poll, except ErrDeepReorg, which stops the watcher.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		err := w.Step(ctx)
		if errors.Is(err, ErrDeepReorg) {
			w.log.Error("chain watcher stopped", "error", err)
			return err
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("chain watcher", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step applies the blocks after the cursor up to the head (undoing
// orphaned ones first), fails submissions that stayed open too long,
// sends stored payouts that are not in a block yet, and pays the refunds
// that have their confirmations.
func (w *Watcher) Step(ctx context.Context) error {
	err := w.step(ctx)
	w.cfg.Metrics.chainMetrics().Poll(err)
	return err
}

func (w *Watcher) step(ctx context.Context) error {
	head, err := w.chain.BlockNumber(ctx)
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	w.cfg.Metrics.chainMetrics().Head(head)
	for range blocksPerStep {
		more, err := w.advance(ctx, head)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if err := w.expire(ctx); err != nil {
		return err
	}
	if w.cfg.PayerKey == nil {
		return nil
	}
	if err := w.resend(ctx); err != nil {
		return err
	}
	if err := w.pay(ctx); err != nil {
		return err
	}
	return w.measurePayouts(ctx)
}

// measurePayouts records the age of the oldest refund whose payout is in
// flight (PAYING or PAID), since the refund was learned; 0 when none.
func (w *Watcher) measurePayouts(ctx context.Context) error {
	if w.cfg.Metrics == nil {
		return nil
	}
	var age float64
	if err := w.pool.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM orderflow_refunds WHERE status IN ('PAYING', 'PAID')`).Scan(&age); err != nil {
		return fmt.Errorf("oldest payout in flight: %w", err)
	}
	w.cfg.Metrics.oldestUnconfirmed(age)
	return nil
}

// expire fails transactions and bundles that stayed open longer than
// PendingTTL, with the reason reasonExpired, and publishes their events.
// Their ids name the cursor's block, the chain as the watcher knew it
// when it gave up on them.
func (w *Watcher) expire(ctx context.Context) error {
	cur, ok, err := w.cursor(ctx, w.pool)
	if err != nil {
		return err
	}
	if ok {
		w.cfg.Metrics.chainMetrics().Processed(cur.number)
	}
	cutoff := time.Now().Add(-w.cfg.PendingTTL)
	return w.decide(ctx, func(tx pgx.Tx, evs *events) error {
		now := time.Now().UnixMilli()
		err := eachHash(ctx, tx, `UPDATE orderflow_txs SET status = 'FAILED', reason = $2, updated_at = now()
			WHERE status = 'PENDING' AND received_at < $1 RETURNING hash`, cutoff, func(h string) {
			evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowTxStatus, eventID("txs", h, topics.TxFailed, cur.number, cur.hash), h,
				topics.OrderflowTxStatus{Hash: h, Status: topics.TxFailed, Reason: reasonExpired, At: now})
		})
		if err != nil {
			return fmt.Errorf("expire txs: %w", err)
		}
		err = eachHash(ctx, tx, `UPDATE orderflow_bundles SET status = 'FAILED', reason = $2, updated_at = now()
			WHERE status IN ('RECEIVED', 'FORWARDED') AND received_at < $1 RETURNING bundle_hash`, cutoff, func(h string) {
			evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowBundleStatus, eventID("bs", h, topics.BundleFailed, cur.number, cur.hash), h,
				topics.OrderflowBundleStatus{BundleHash: h, Status: topics.BundleFailed, Reason: reasonExpired, At: now})
		})
		if err != nil {
			return fmt.Errorf("expire bundles: %w", err)
		}
		return nil
	})
}

// eachHash runs an expiring UPDATE (cutoff $1, reason $2) that returns
// hashes, and calls fn with each.
func eachHash(ctx context.Context, tx pgx.Tx, sql string, cutoff time.Time, fn func(h string)) error {
	rows, err := tx.Query(ctx, sql, cutoff, reasonExpired)
	if err != nil {
		return err
	}
	var h string
	_, err = pgx.ForEachRow(rows, []any{&h}, func() error {
		fn(h)
		return nil
	})
	return err
}

// reasonExpired is the reason of a transaction or bundle that was not
// included within PendingTTL.
const reasonExpired = "not included in time"

// event is one orderflow event, kept in the outbox by the transaction
// that decided it and published once that transaction has committed.
type event struct {
	topic, typ, id, key string
	payload             any
}

type events []event

func (e *events) add(topic, typ, id, key string, payload any) {
	*e = append(*e, event{topic: topic, typ: typ, id: id, key: key, payload: payload})
}

// decide runs fn in one transaction, keeps the events fn adds in the
// outbox in the same transaction and publishes them once it has
// committed; the outbox relay delivers what a crash or a Kafka outage
// left.
func (w *Watcher) decide(ctx context.Context, fn func(tx pgx.Tx, evs *events) error) error {
	var kept []outbox.Pending
	var decided events
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var evs events
		if err := fn(tx, &evs); err != nil {
			return err
		}
		var err error
		kept, err = w.keep(ctx, tx, evs)
		decided = evs
		return err
	})
	if err != nil {
		return err
	}
	w.cfg.Metrics.decided(decided)
	if w.out != nil {
		w.out.Publish(ctx, kept)
	}
	return nil
}

// keep writes evs to the outbox in tx. A watcher without an outbox keeps
// nothing.
func (w *Watcher) keep(ctx context.Context, tx pgx.Tx, evs events) ([]outbox.Pending, error) {
	if w.out == nil {
		return nil, nil
	}
	recs := make([]*kgo.Record, len(evs))
	for i, e := range evs {
		env, err := topics.NewEnvelope(e.typ, topics.OrderflowVersion, e.id, time.Now(), e.payload)
		if err != nil {
			return nil, fmt.Errorf("orderflow event %s: %w", e.id, err)
		}
		if recs[i], err = kafka.NewRecord(e.topic, []byte(e.key), env); err != nil {
			return nil, fmt.Errorf("orderflow event %s: %w", e.id, err)
		}
	}
	return outbox.EnqueueAll(ctx, tx, recs)
}

// eventID names an event the chain decided: what it is about, the status
// it reached and the block it was learned from (its number and the first
// four bytes of its hash). The same status reached again in another block
// after a reorganisation is a new event, not a duplicate that consumers
// would drop. The longest id, a refund's, is 118 bytes, within the
// envelope's 128.
func eventID(prefix, subject, status string, block uint64, blockHash string) string {
	return fmt.Sprintf("%s-%s-%s-%d-%s", prefix, subject, status, block, shortHash(blockHash))
}

// refundSubject names a refund in event ids: the originator transaction
// and the first four bytes of the backrun bundle's hash (the refund id,
// both hashes in full, is too long for an envelope id).
func refundSubject(txHash, bundleHash string) string {
	return txHash + "-" + shortHash(bundleHash)
}

// shortHash is the first four bytes of a 0x hash in hex.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, "0x")
	return h[:min(8, len(h))]
}
