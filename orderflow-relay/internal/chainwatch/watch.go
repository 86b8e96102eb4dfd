// Package chainwatch learns from the chain what happened to private
// orderflow: it marks transactions and bundles INCLUDED when they appear
// in a block, turns an included backrun's payment into the originator's
// refund liability, pays refunds on chain, and confirms the payouts.
package chainwatch

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/topics"
)

// Chain is what the watcher needs of an Ethereum node; ethclient.Client
// and go-ethereum's simulated client both satisfy it.
type Chain interface {
	BlockNumber(ctx context.Context) (uint64, error)
	BlockByNumber(ctx context.Context, number *big.Int) (*types.Block, error)
	TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	SuggestGasTipCap(ctx context.Context) (*big.Int, error)
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
}

// Watcher follows the chain head.
type Watcher struct {
	cfg      Config
	chain    Chain
	pool     *pgxpool.Pool
	producer of.Producer
	log      *slog.Logger
	next     uint64
}

// New returns a watcher.
func New(cfg Config, chain Chain, pool *pgxpool.Pool, producer of.Producer, log *slog.Logger) *Watcher {
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = 10 * time.Minute
	}
	return &Watcher{cfg: cfg, chain: chain, pool: pool, producer: producer, log: log}
}

// Run follows the chain until ctx ends. It starts a few blocks back so a
// restart misses nothing recent; marking is idempotent.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	for {
		if err := w.step(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("chain watcher", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (w *Watcher) step(ctx context.Context) error {
	head, err := w.chain.BlockNumber(ctx)
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	if w.next == 0 {
		w.next = max(head, 16) - 16 + 1
	}
	for ; w.next <= head; w.next++ {
		if err := w.block(ctx, w.next); err != nil {
			return fmt.Errorf("block %d: %w", w.next, err)
		}
	}
	if err := w.expire(ctx); err != nil {
		return err
	}
	return w.pay(ctx, head)
}

// block applies one block: included transactions, bundles, refunds and
// confirmed payouts.
func (w *Watcher) block(ctx context.Context, n uint64) error {
	blk, err := w.chain.BlockByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return err
	}
	hashes := make([]string, 0, len(blk.Transactions()))
	for _, tx := range blk.Transactions() {
		hashes = append(hashes, strings.ToLower(tx.Hash().Hex()))
	}
	if len(hashes) == 0 {
		return nil
	}
	now := time.Now().UnixMilli()
	rows, err := w.pool.Query(ctx, `UPDATE orderflow_txs SET status = 'INCLUDED', block_number = $2, block_hash = $3, updated_at = now()
		WHERE hash = ANY($1) AND status <> 'INCLUDED' RETURNING hash`, hashes, n, strings.ToLower(blk.Hash().Hex()))
	if err != nil {
		return err
	}
	included, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, h := range included {
		w.publish(ctx, topics.OrderflowLifecycle, topics.TypeOrderflowTxStatus, "txs-"+h+"-INCLUDED", h,
			topics.OrderflowTxStatus{Hash: h, Status: topics.TxIncluded, BlockNumber: n, BlockHash: blk.Hash().Hex(), At: now})
	}
	if err := w.bundles(ctx, blk, hashes); err != nil {
		return err
	}
	return w.confirmPayouts(ctx, n, hashes)
}

type bundleRow struct {
	hash, backrunOf string
	txs             []string
}

func (w *Watcher) bundles(ctx context.Context, blk *types.Block, hashes []string) error {
	rows, err := w.pool.Query(ctx, `SELECT bundle_hash, backrun_of, tx_hashes FROM orderflow_bundles
		WHERE status IN ('RECEIVED', 'FORWARDED') AND tx_hashes && $1`, hashes)
	if err != nil {
		return err
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (bundleRow, error) {
		var b bundleRow
		return b, r.Scan(&b.hash, &b.backrunOf, &b.txs)
	})
	if err != nil {
		return err
	}
	inBlock := make(map[string]bool, len(hashes))
	for _, h := range hashes {
		inBlock[h] = true
	}
	for _, b := range found {
		if !allIn(b.txs, inBlock) {
			continue
		}
		tag, err := w.pool.Exec(ctx, `UPDATE orderflow_bundles SET status = 'INCLUDED', block_number = $2, updated_at = now()
			WHERE bundle_hash = $1 AND status IN ('RECEIVED', 'FORWARDED')`, b.hash, blk.NumberU64())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		w.publish(ctx, topics.OrderflowLifecycle, topics.TypeOrderflowBundleStatus, "bs-"+b.hash+"-INCLUDED", b.hash,
			topics.OrderflowBundleStatus{BundleHash: b.hash, Status: topics.BundleIncluded, BlockNumber: blk.NumberU64(), At: time.Now().UnixMilli()})
		if b.backrunOf != "" {
			if err := w.refund(ctx, blk, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func allIn(txs []string, set map[string]bool) bool {
	for _, h := range txs {
		if !set[h] {
			return false
		}
	}
	return len(txs) > 0
}

// Payment is what a backrun paid the block's builder: for each of its
// transactions (the originator's excluded), the priority fee on the gas it
// used plus any value it sent to the block's fee recipient.
func (w *Watcher) payment(ctx context.Context, blk *types.Block, b bundleRow) (*big.Int, error) {
	total := new(big.Int)
	base := blk.BaseFee()
	if base == nil {
		base = new(big.Int)
	}
	byHash := make(map[string]*types.Transaction)
	for _, tx := range blk.Transactions() {
		byHash[strings.ToLower(tx.Hash().Hex())] = tx
	}
	for _, h := range b.txs {
		if h == b.backrunOf {
			continue
		}
		rc, err := w.chain.TransactionReceipt(ctx, common.HexToHash(h))
		if err != nil {
			return nil, fmt.Errorf("receipt %s: %w", h, err)
		}
		if rc.EffectiveGasPrice != nil && rc.EffectiveGasPrice.Cmp(base) > 0 {
			tip := new(big.Int).Sub(rc.EffectiveGasPrice, base)
			total.Add(total, tip.Mul(tip, new(big.Int).SetUint64(rc.GasUsed)))
		}
		if tx := byHash[h]; tx != nil && tx.To() != nil && *tx.To() == blk.Coinbase() && rc.Status == types.ReceiptStatusSuccessful {
			total.Add(total, tx.Value())
		}
	}
	return total, nil
}

func (w *Watcher) refund(ctx context.Context, blk *types.Block, b bundleRow) error {
	var r topics.OrderflowRefund
	err := w.pool.QueryRow(ctx, `SELECT originator, refund_recipient, refund_percent FROM orderflow_txs WHERE hash = $1`, b.backrunOf).
		Scan(&r.Originator, &r.Recipient, &r.Percent)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && r.Percent == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	pay, err := w.payment(ctx, blk, b)
	if err != nil {
		return err
	}
	amount := new(big.Int).Div(new(big.Int).Mul(pay, big.NewInt(int64(r.Percent))), big.NewInt(100))
	r.RefundID, r.TxHash, r.BundleHash = b.hash+":"+b.backrunOf, b.backrunOf, b.hash
	r.PaymentWei, r.AmountWei, r.BlockNumber, r.Status, r.At = pay.String(), amount.String(), blk.NumberU64(), topics.RefundPending, time.Now().UnixMilli()
	tag, err := w.pool.Exec(ctx, `INSERT INTO orderflow_refunds (refund_id, tx_hash, bundle_hash, originator, recipient, percent, payment_wei, amount_wei, block_number, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PENDING') ON CONFLICT (refund_id) DO NOTHING`,
		r.RefundID, r.TxHash, r.BundleHash, r.Originator, r.Recipient, r.Percent, r.PaymentWei, r.AmountWei, r.BlockNumber)
	if err != nil {
		return fmt.Errorf("record refund: %w", err)
	}
	if tag.RowsAffected() > 0 {
		w.publish(ctx, topics.OrderflowRefunds, topics.TypeOrderflowRefund, "refund-"+r.RefundID+"-PENDING", r.TxHash, r)
	}
	return nil
}

// expire fails transactions and bundles that stayed open too long.
func (w *Watcher) expire(ctx context.Context) error {
	cutoff := time.Now().Add(-w.cfg.PendingTTL)
	if _, err := w.pool.Exec(ctx, `UPDATE orderflow_txs SET status = 'FAILED', reason = 'not included in time', updated_at = now()
		WHERE status = 'PENDING' AND received_at < $1`, cutoff); err != nil {
		return fmt.Errorf("expire txs: %w", err)
	}
	if _, err := w.pool.Exec(ctx, `UPDATE orderflow_bundles SET status = 'FAILED', reason = 'not included in time', updated_at = now()
		WHERE status IN ('RECEIVED', 'FORWARDED') AND received_at < $1`, cutoff); err != nil {
		return fmt.Errorf("expire bundles: %w", err)
	}
	return nil
}

func (w *Watcher) publish(ctx context.Context, topic, typ, id, key string, payload any) {
	if w.producer == nil {
		return
	}
	if err := of.Publish(ctx, w.producer, topic, typ, id, key, payload); err != nil {
		w.log.Warn("publish orderflow event", "type", typ, "error", err)
	}
}
