package inclusions

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/topics"
)

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// cursor is the last block the watcher applied.
type cursor struct {
	number uint64
	hash   string
}

func (w *Watcher) chainID() int64 { return w.cfg.ChainID.Int64() }

func (w *Watcher) cursor(ctx context.Context, q querier) (cursor, bool, error) {
	var c cursor
	var n int64
	err := q.QueryRow(ctx, `SELECT number, hash FROM orderflow_chain_blocks WHERE chain_id = $1 ORDER BY number DESC LIMIT 1`,
		w.chainID()).Scan(&n, &c.hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return cursor{}, false, nil
	}
	if err != nil {
		return cursor{}, false, fmt.Errorf("read chain cursor: %w", err)
	}
	c.number = uint64(n)
	return c, true, nil
}

// anchor places the cursor of a watcher that never ran firstLookback
// blocks behind the head, so that it applies the blocks after that one.
func (w *Watcher) anchor(ctx context.Context, tx pgx.Tx, head uint64) error {
	n := max(head, firstLookback) - firstLookback
	h, err := w.chain.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return fmt.Errorf("header %d: %w", n, err)
	}
	w.log.Info("chain watcher starts: no stored cursor", "after", n)
	return w.store(ctx, tx, h)
}

// store makes h the cursor and forgets blocks deeper than history.
func (w *Watcher) store(ctx context.Context, tx pgx.Tx, h *types.Header) error {
	n := h.Number.Int64()
	if _, err := tx.Exec(ctx, `INSERT INTO orderflow_chain_blocks (chain_id, number, hash, parent_hash) VALUES ($1, $2, $3, $4)`,
		w.chainID(), n, lowerHash(h.Hash()), lowerHash(h.ParentHash)); err != nil {
		return fmt.Errorf("store chain cursor: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM orderflow_chain_blocks WHERE chain_id = $1 AND number <= $2`, w.chainID(), n-history); err != nil {
		return fmt.Errorf("prune chain blocks: %w", err)
	}
	return nil
}

// rewind finds the deepest stored block that is still canonical and
// undoes what the blocks above it changed; the next advance applies the
// new branch from there.
func (w *Watcher) rewind(ctx context.Context, tx pgx.Tx, cur cursor, evs *events) error {
	rows, err := tx.Query(ctx, `SELECT number, hash FROM orderflow_chain_blocks WHERE chain_id = $1 ORDER BY number DESC`, w.chainID())
	if err != nil {
		return fmt.Errorf("read chain blocks: %w", err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Number int64
		Hash   string
	}])
	if err != nil {
		return fmt.Errorf("read chain blocks: %w", err)
	}
	for _, b := range stored {
		h, err := w.chain.HeaderByNumber(ctx, big.NewInt(b.Number))
		if err != nil {
			return fmt.Errorf("header %d: %w", b.Number, err)
		}
		if lowerHash(h.Hash()) == b.Hash {
			w.log.Warn("chain reorganisation: undoing orphaned blocks", "from", b.Number+1, "to", cur.number)
			return w.undo(ctx, tx, uint64(b.Number), evs)
		}
	}
	return fmt.Errorf("%w: blocks %d to %d of chain %d differ from the node's", ErrDeepReorg,
		stored[len(stored)-1].Number, cur.number, w.chainID())
}

// undo takes back what the blocks above ancestor changed: their
// inclusions return to open, their unpaid refunds are withdrawn
// (ORPHANED) and payouts confirmed in them are PAID again, to be sent
// until they are in a canonical block. A refund of those blocks whose
// payout is already signed cannot be withdrawn: it is logged as an error
// (the reorganisation was deeper than RefundConfirmations).
func (w *Watcher) undo(ctx context.Context, tx pgx.Tx, ancestor uint64, evs *events) error {
	if err := w.undoInclusions(ctx, tx, ancestor, evs); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `DELETE FROM orderflow_refunds WHERE block_number > $1 AND status = 'PENDING'
		RETURNING refund_id, tx_hash, bundle_hash, originator, recipient, percent, payment_wei::text, amount_wei::text, block_number, block_hash`, ancestor)
	if err != nil {
		return fmt.Errorf("withdraw refunds: %w", err)
	}
	type withdrawal struct {
		topics.OrderflowRefund
		blockHash string
	}
	withdrawn, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (withdrawal, error) {
		var rf withdrawal
		return rf, r.Scan(&rf.RefundID, &rf.TxHash, &rf.BundleHash, &rf.Originator, &rf.Recipient, &rf.Percent, &rf.PaymentWei, &rf.AmountWei, &rf.BlockNumber, &rf.blockHash)
	})
	if err != nil {
		return fmt.Errorf("withdraw refunds: %w", err)
	}
	for _, rf := range withdrawn {
		rf.Status, rf.At = topics.RefundOrphaned, time.Now().UnixMilli()
		w.log.Info("refund withdrawn: its block was orphaned", "refund", rf.RefundID, "block", rf.BlockNumber)
		evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund,
			eventID("rf", refundSubject(rf.TxHash, rf.BundleHash), topics.RefundOrphaned, rf.BlockNumber, rf.blockHash), rf.TxHash, rf.OrderflowRefund)
	}
	if err := w.reportPaidOrphans(ctx, tx, ancestor); err != nil {
		return err
	}
	if err := w.undoPayouts(ctx, tx, ancestor, evs); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM orderflow_chain_blocks WHERE chain_id = $1 AND number > $2`, w.chainID(), ancestor); err != nil {
		return fmt.Errorf("rewind chain cursor: %w", err)
	}
	return nil
}

func (w *Watcher) reportPaidOrphans(ctx context.Context, tx pgx.Tx, ancestor uint64) error {
	rows, err := tx.Query(ctx, `SELECT refund_id, status, payout_tx_hash FROM orderflow_refunds WHERE block_number > $1`, ancestor)
	if err != nil {
		return fmt.Errorf("find paid orphaned refunds: %w", err)
	}
	paid, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ ID, Status, Payout string }])
	if err != nil {
		return fmt.Errorf("find paid orphaned refunds: %w", err)
	}
	for _, p := range paid {
		w.log.Error("refund of an orphaned block was already paid", "refund", p.ID, "status", p.Status, "payout", p.Payout)
	}
	return nil
}

// Forget drops what the watcher knows of chain chainID, for a chain that
// was replaced by a new one (the dev chain, new at every start): its
// cursor and block history, and the refunds that were not confirmed on it
// (their blocks and payouts are gone with it). The next watcher starts as
// if it never ran.
func Forget(ctx context.Context, pool *pgxpool.Pool, chainID *big.Int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM orderflow_chain_blocks WHERE chain_id = $1`, chainID.Int64()); err != nil {
			return fmt.Errorf("forget chain blocks: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM orderflow_refunds WHERE status <> 'CONFIRMED'`); err != nil {
			return fmt.Errorf("forget open refunds: %w", err)
		}
		return nil
	})
}

// undoInclusions returns the transactions and bundles included above
// ancestor to open (a transaction PENDING, a bundle FORWARDED or RECEIVED),
// each with an event whose reason is "reorg".
func (w *Watcher) undoInclusions(ctx context.Context, tx pgx.Tx, ancestor uint64, evs *events) error {
	rows, err := tx.Query(ctx, `UPDATE orderflow_txs t SET status = 'PENDING', block_number = NULL, block_hash = NULL, updated_at = now()
		FROM (SELECT hash, block_number, block_hash FROM orderflow_txs WHERE block_number > $1 AND status = 'INCLUDED' FOR UPDATE) old
		WHERE t.hash = old.hash
		RETURNING old.hash, old.block_number, coalesce(old.block_hash, '')`, ancestor)
	if err != nil {
		return fmt.Errorf("undo inclusions: %w", err)
	}
	now := time.Now().UnixMilli()
	var h, blockHash string
	var n uint64
	if _, err := pgx.ForEachRow(rows, []any{&h, &n, &blockHash}, func() error {
		evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowTxStatus, eventID("txs", h, topics.TxPending, n, blockHash), h,
			topics.OrderflowTxStatus{Hash: h, Status: topics.TxPending, Reason: reasonReorg, At: now})
		return nil
	}); err != nil {
		return fmt.Errorf("undo inclusions: %w", err)
	}
	rows, err = tx.Query(ctx, `UPDATE orderflow_bundles b SET block_number = NULL, updated_at = now(),
		    status = CASE WHEN cardinality(b.builders) > 0 THEN 'FORWARDED' ELSE 'RECEIVED' END
		FROM (SELECT o.bundle_hash, o.block_number, coalesce(c.hash, '') AS block_hash
		      FROM orderflow_bundles o LEFT JOIN orderflow_chain_blocks c ON c.chain_id = $2 AND c.number = o.block_number
		      WHERE o.block_number > $1 AND o.status = 'INCLUDED' FOR UPDATE OF o) old
		WHERE b.bundle_hash = old.bundle_hash
		RETURNING old.bundle_hash, b.status, old.block_number, old.block_hash`, ancestor, w.chainID())
	if err != nil {
		return fmt.Errorf("undo bundle inclusions: %w", err)
	}
	var status string
	if _, err := pgx.ForEachRow(rows, []any{&h, &status, &n, &blockHash}, func() error {
		evs.add(topics.OrderflowLifecycle, topics.TypeOrderflowBundleStatus, eventID("bs", h, status, n, blockHash), h,
			topics.OrderflowBundleStatus{BundleHash: h, Status: status, Reason: reasonReorg, At: now})
		return nil
	}); err != nil {
		return fmt.Errorf("undo bundle inclusions: %w", err)
	}
	return nil
}

// undoPayouts returns the payouts confirmed (or failed) in blocks above
// ancestor to PAID: they are sent again until a canonical block has them.
func (w *Watcher) undoPayouts(ctx context.Context, tx pgx.Tx, ancestor uint64, evs *events) error {
	rows, err := tx.Query(ctx, `UPDATE orderflow_refunds r SET status = 'PAID', payout_block = NULL, failure = '', updated_at = now()
		FROM (SELECT o.refund_id, o.payout_block, coalesce(c.hash, '') AS block_hash
		      FROM orderflow_refunds o LEFT JOIN orderflow_chain_blocks c ON c.chain_id = $2 AND c.number = o.payout_block
		      WHERE o.status IN ('CONFIRMED', 'FAILED') AND o.payout_block > $1 FOR UPDATE OF o) old
		WHERE r.refund_id = old.refund_id
		RETURNING r.refund_id, r.tx_hash, r.bundle_hash, r.payout_tx_hash, old.payout_block, old.block_hash`, ancestor, w.chainID())
	if err != nil {
		return fmt.Errorf("undo payout confirmations: %w", err)
	}
	now := time.Now().UnixMilli()
	var id, txHash, bundle, payout, blockHash string
	var n uint64
	if _, err := pgx.ForEachRow(rows, []any{&id, &txHash, &bundle, &payout, &n, &blockHash}, func() error {
		evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, eventID("rf", refundSubject(txHash, bundle), topics.RefundPaid, n, blockHash), txHash,
			topics.OrderflowRefund{RefundID: id, TxHash: txHash, BundleHash: bundle, Status: topics.RefundPaid, PayoutTxHash: payout, Reason: reasonReorg, At: now})
		return nil
	}); err != nil {
		return fmt.Errorf("undo payout confirmations: %w", err)
	}
	return nil
}

// reasonReorg is the reason of the events that take back what an
// orphaned block changed.
const reasonReorg = "reorg"
