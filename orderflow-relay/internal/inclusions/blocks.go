package inclusions

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	"blockspace.exchange/topics"
)

// advance applies the block after the cursor or, when that block's parent
// is not the cursor's block, undoes the blocks a reorganisation orphaned.
// It works in one Postgres transaction that holds the watcher's advisory
// lock: the cursor moves together with what the block changed, and two
// relays never apply blocks at once (the one that does not get the lock
// leaves the chain to the other this step). more is false once the cursor
// is at head or the lock is taken.
func (w *Watcher) advance(ctx context.Context, head uint64) (more bool, err error) {
	err = w.decide(ctx, func(tx pgx.Tx, evs *events) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('orderflow chain watcher ' || $1::bigint, 0))`,
			w.chainID()).Scan(&locked); err != nil {
			return fmt.Errorf("lock chain cursor: %w", err)
		}
		if !locked {
			return nil
		}
		cur, ok, err := w.cursor(ctx, tx)
		if err != nil {
			return err
		}
		if !ok {
			more = true
			return w.anchor(ctx, tx, head)
		}
		if cur.number >= head {
			return nil
		}
		more = true
		blk, err := w.chain.BlockByNumber(ctx, new(big.Int).SetUint64(cur.number+1))
		if err != nil {
			return fmt.Errorf("block %d: %w", cur.number+1, err)
		}
		if lowerHash(blk.ParentHash()) != cur.hash {
			return w.rewind(ctx, tx, cur, evs)
		}
		if err := w.apply(ctx, tx, blk, evs); err != nil {
			return fmt.Errorf("block %d: %w", blk.NumberU64(), err)
		}
		return w.store(ctx, tx, blk.Header())
	})
	if err != nil {
		return false, err
	}
	return more, nil
}

// apply records one block: included transactions, bundles, refunds and
// payouts in the block.
func (w *Watcher) apply(ctx context.Context, tx pgx.Tx, blk *types.Block, evs *events) error {
	hashes := make([]string, 0, len(blk.Transactions()))
	for _, t := range blk.Transactions() {
		hashes = append(hashes, lowerHash(t.Hash()))
	}
	if len(hashes) == 0 {
		return nil
	}
	n, blockHash := blk.NumberU64(), lowerHash(blk.Hash())
	rows, err := tx.Query(ctx, `UPDATE orderflow_txs SET status = 'INCLUDED', block_number = $2, block_hash = $3, updated_at = now()
		WHERE hash = ANY($1) AND status <> 'INCLUDED' RETURNING hash`, hashes, n, blockHash)
	if err != nil {
		return fmt.Errorf("mark included: %w", err)
	}
	included, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("mark included: %w", err)
	}
	now := time.Now().UnixMilli()
	for _, h := range included {
		evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowTxStatus, eventID("txs", h, topics.TxIncluded, n, blockHash), h,
			topics.OrderflowTxStatus{Hash: h, Status: topics.TxIncluded, BlockNumber: n, BlockHash: blockHash, At: now})
	}
	if err := w.bundles(ctx, tx, blk, hashes, evs); err != nil {
		return err
	}
	return w.confirmPayouts(ctx, tx, n, blockHash, hashes, evs)
}

type bundleRow struct {
	hash, backrunOf string
	txs             []string
}

// bundles marks the bundles whose every transaction is in the block
// INCLUDED, and records the refund a backrun among them owes.
func (w *Watcher) bundles(ctx context.Context, tx pgx.Tx, blk *types.Block, hashes []string, evs *events) error {
	rows, err := tx.Query(ctx, `SELECT bundle_hash, backrun_of, tx_hashes FROM orderflow_bundles
		WHERE status IN ('RECEIVED', 'FORWARDED') AND tx_hashes && $1`, hashes)
	if err != nil {
		return fmt.Errorf("find bundles: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (bundleRow, error) {
		var b bundleRow
		return b, r.Scan(&b.hash, &b.backrunOf, &b.txs)
	})
	if err != nil {
		return fmt.Errorf("find bundles: %w", err)
	}
	inBlock := make(map[string]bool, len(hashes))
	for _, h := range hashes {
		inBlock[h] = true
	}
	for _, b := range found {
		if !allIn(b.txs, inBlock) {
			continue
		}
		tag, err := tx.Exec(ctx, `UPDATE orderflow_bundles SET status = 'INCLUDED', block_number = $2, updated_at = now()
			WHERE bundle_hash = $1 AND status IN ('RECEIVED', 'FORWARDED')`, b.hash, blk.NumberU64())
		if err != nil {
			return fmt.Errorf("mark bundle included: %w", err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowBundleStatus, eventID("bs", b.hash, topics.BundleIncluded, blk.NumberU64(), lowerHash(blk.Hash())), b.hash,
			topics.OrderflowBundleStatus{BundleHash: b.hash, Status: topics.BundleIncluded, BlockNumber: blk.NumberU64(), At: time.Now().UnixMilli()})
		if b.backrunOf != "" {
			if err := w.refund(ctx, tx, blk, b, evs); err != nil {
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

// payment is what a backrun paid the block's builder: for each of its
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
		byHash[lowerHash(tx.Hash())] = tx
	}
	for _, h := range b.txs {
		if h == b.backrunOf {
			continue
		}
		rc, err := w.chain.TransactionReceipt(ctx, common.HexToHash(h))
		if err != nil {
			return nil, fmt.Errorf("receipt %s: %w", h, err)
		}
		if rc.BlockHash != blk.Hash() {
			return nil, fmt.Errorf("receipt %s is of block %s, not %s: the chain moved", h, rc.BlockHash.Hex(), blk.Hash().Hex())
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

// refund records the originator's share of a backrun's payment as a
// PENDING liability of the block it was learned from.
func (w *Watcher) refund(ctx context.Context, tx pgx.Tx, blk *types.Block, b bundleRow, evs *events) error {
	var r topics.OrderflowRefund
	err := tx.QueryRow(ctx, `SELECT originator, refund_recipient, refund_percent FROM orderflow_txs WHERE hash = $1`, b.backrunOf).
		Scan(&r.Originator, &r.Recipient, &r.Percent)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && r.Percent == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("refund policy: %w", err)
	}
	pay, err := w.payment(ctx, blk, b)
	if err != nil {
		return err
	}
	amount := new(big.Int).Div(new(big.Int).Mul(pay, big.NewInt(int64(r.Percent))), big.NewInt(100))
	r.RefundID, r.TxHash, r.BundleHash = b.hash+":"+b.backrunOf, b.backrunOf, b.hash
	r.PaymentWei, r.AmountWei, r.BlockNumber, r.Status, r.At = pay.String(), amount.String(), blk.NumberU64(), topics.RefundPending, time.Now().UnixMilli()
	tag, err := tx.Exec(ctx, `INSERT INTO orderflow_refunds (refund_id, tx_hash, bundle_hash, originator, recipient, percent, payment_wei, amount_wei, block_number, block_hash, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'PENDING') ON CONFLICT (refund_id) DO NOTHING`,
		r.RefundID, r.TxHash, r.BundleHash, r.Originator, r.Recipient, r.Percent, r.PaymentWei, r.AmountWei, r.BlockNumber, lowerHash(blk.Hash()))
	if err != nil {
		return fmt.Errorf("record refund: %w", err)
	}
	if tag.RowsAffected() > 0 {
		evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, eventID("rf", refundSubject(r.TxHash, r.BundleHash), topics.RefundPending, r.BlockNumber, lowerHash(blk.Hash())), r.TxHash, r)
	}
	return nil
}

func lowerHash(h common.Hash) string { return strings.ToLower(h.Hex()) }
