package chainwatch

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"

	"blockspace.exchange/topics"
)

type claimed struct {
	id, recipient, amount, txHash, originator, bundle string
	percent                                           int
	block                                             uint64
}

// pay sends the pending refunds whose block has RefundConfirmations
// blocks after it at head. A refund is claimed (PAYING) in one statement
// with SKIP LOCKED, so several relay instances never pay one refund twice;
// a failed send returns it to PENDING.
func (w *Watcher) pay(ctx context.Context, head uint64) error {
	if w.cfg.PayerKey == nil || head < w.cfg.RefundConfirmations {
		return nil
	}
	rows, err := w.pool.Query(ctx, `UPDATE orderflow_refunds SET status = 'PAYING', updated_at = now()
		WHERE refund_id IN (SELECT refund_id FROM orderflow_refunds WHERE status = 'PENDING' AND block_number <= $1
			ORDER BY created_at LIMIT 32 FOR UPDATE SKIP LOCKED)
		RETURNING refund_id, recipient, amount_wei::text, tx_hash, originator, bundle_hash, percent, block_number`,
		head-w.cfg.RefundConfirmations)
	if err != nil {
		return fmt.Errorf("claim refunds: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		return c, r.Scan(&c.id, &c.recipient, &c.amount, &c.txHash, &c.originator, &c.bundle, &c.percent, &c.block)
	})
	if err != nil || len(list) == 0 {
		return err
	}
	from := crypto.PubkeyToAddress(w.cfg.PayerKey.PublicKey)
	nonce, err := w.chain.PendingNonceAt(ctx, from)
	if err != nil {
		w.unclaim(ctx, list)
		return fmt.Errorf("payer nonce: %w", err)
	}
	tip, err := w.chain.SuggestGasTipCap(ctx)
	if err != nil {
		tip = big.NewInt(1_000_000_000)
	}
	for i, c := range list {
		if err := w.payOne(ctx, c, nonce, tip); err != nil {
			w.log.Warn("pay refund", "refund", c.id, "error", err)
			w.unclaim(ctx, list[i:])
			return nil
		}
		nonce++
	}
	return nil
}

func (w *Watcher) payOne(ctx context.Context, c claimed, nonce uint64, tip *big.Int) error {
	amount, _ := new(big.Int).SetString(c.amount, 10)
	to := common.HexToAddress(c.recipient)
	feeCap := new(big.Int).Add(new(big.Int).Mul(tip, big.NewInt(2)), big.NewInt(100_000_000_000))
	tx, err := types.SignNewTx(w.cfg.PayerKey, types.LatestSignerForChainID(w.cfg.ChainID), &types.DynamicFeeTx{
		ChainID: w.cfg.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 21000, To: &to, Value: amount,
	})
	if err != nil {
		return err
	}
	if err := w.chain.SendTransaction(ctx, tx); err != nil {
		return err
	}
	hash := strings.ToLower(tx.Hash().Hex())
	if _, err := w.pool.Exec(ctx, `UPDATE orderflow_refunds SET status = 'PAID', payout_tx_hash = $2, updated_at = now() WHERE refund_id = $1`, c.id, hash); err != nil {
		return err
	}
	w.publish(ctx, topics.OrderflowRefunds, topics.TypeOrderflowRefund, "refund-"+c.id+"-PAID", c.txHash, topics.OrderflowRefund{
		RefundID: c.id, TxHash: c.txHash, BundleHash: c.bundle, Originator: c.originator, Recipient: c.recipient, Percent: c.percent,
		AmountWei: c.amount, BlockNumber: c.block, Status: topics.RefundPaid, PayoutTxHash: hash, At: time.Now().UnixMilli()})
	return nil
}

func (w *Watcher) unclaim(ctx context.Context, list []claimed) {
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.id)
	}
	if _, err := w.pool.Exec(ctx, `UPDATE orderflow_refunds SET status = 'PENDING' WHERE refund_id = ANY($1) AND status = 'PAYING'`, ids); err != nil {
		w.log.Warn("return refunds to pending", "error", err)
	}
}

// confirmPayouts marks payouts found in block n CONFIRMED.
func (w *Watcher) confirmPayouts(ctx context.Context, n uint64, hashes []string) error {
	rows, err := w.pool.Query(ctx, `UPDATE orderflow_refunds SET status = 'CONFIRMED', payout_block = $2, updated_at = now()
		WHERE payout_tx_hash = ANY($1) AND status = 'PAID' RETURNING refund_id, tx_hash, payout_tx_hash`, hashes, n)
	if err != nil {
		return fmt.Errorf("confirm payouts: %w", err)
	}
	type done struct{ id, tx, payout string }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (done, error) {
		var d done
		return d, r.Scan(&d.id, &d.tx, &d.payout)
	})
	if err != nil {
		return err
	}
	for _, d := range list {
		w.publish(ctx, topics.OrderflowRefunds, topics.TypeOrderflowRefund, "refund-"+d.id+"-CONFIRMED", d.tx, topics.OrderflowRefund{
			RefundID: d.id, TxHash: d.tx, Status: topics.RefundConfirmed, PayoutTxHash: d.payout, PayoutBlock: n, At: time.Now().UnixMilli()})
	}
	return nil
}
