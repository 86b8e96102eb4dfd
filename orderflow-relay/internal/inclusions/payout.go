package inclusions

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"blockspace.exchange/topics"
)

// A refund is paid exactly once, across crashes and relays:
//
//  1. pay claims PENDING refunds whose block has RefundConfirmations
//     blocks on top of the cursor (FOR UPDATE SKIP LOCKED), signs each
//     payout with the next nonce and stores it (raw transaction, sender,
//     nonce, hash) with status PAYING, all in one Postgres transaction.
//  2. Only after that commit is the payout sent; once the node took it the
//     refund is PAID.
//  3. Every step, resend looks at the payouts that waited Resend since
//     they were stored or last sent: one with a receipt is CONFIRMED, the
//     others are sent again as stored. The same signed transaction can be
//     mined once at most, and no other payout ever gets its nonce while
//     it is in flight (a unique index), so a crash at any point pays
//     nothing twice.
//  4. A payout found in an applied block is CONFIRMED; a reorganisation
//     that orphans that block makes it PAID again.

// payout is a refund with its stored payout.
type payout struct {
	id, txHash, bundle, originator, recipient, amount string
	percent                                           int
	block                                             uint64
	blockHash                                         string // of the block the refund was learned from
	status, hash                                      string
	failure                                           string // why a FAILED refund's recipient refused it
	tx                                                *types.Transaction
}

// failedEvent is the FAILED event of a refund whose recipient refused it.
func (p payout) failedEvent(payoutBlock uint64) topics.OrderflowRefund {
	ev := p.event(topics.RefundFailed, payoutBlock)
	ev.Reason = p.failure
	return ev
}

// eventID is the id of the refund's event of status, learned from block.
func (p payout) eventID(status string, block uint64, blockHash string) string {
	return eventID("rf", refundSubject(p.txHash, p.bundle), status, block, blockHash)
}

func (p payout) event(status string, payoutBlock uint64) topics.OrderflowRefund {
	return topics.OrderflowRefund{RefundID: p.id, TxHash: p.txHash, BundleHash: p.bundle, Originator: p.originator,
		Recipient: p.recipient, Percent: p.percent, AmountWei: p.amount, BlockNumber: p.block, Status: status,
		PayoutTxHash: p.hash, PayoutBlock: payoutBlock, At: time.Now().UnixMilli()}
}

func (w *Watcher) payer() common.Address { return crypto.PubkeyToAddress(w.cfg.PayerKey.PublicKey) }

// pay signs and stores the payouts of the refunds that have their
// confirmations, then sends them.
func (w *Watcher) pay(ctx context.Context) error {
	cur, ok, err := w.cursor(ctx, w.pool)
	if err != nil || !ok || cur.number < w.cfg.RefundConfirmations {
		return err
	}
	var signed, refused []payout
	err = w.decide(ctx, func(tx pgx.Tx, evs *events) error {
		var err error
		if signed, refused, err = w.claim(ctx, tx, cur.number-w.cfg.RefundConfirmations); err != nil {
			return err
		}
		for _, p := range refused {
			evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, p.eventID(topics.RefundFailed, p.block, p.blockHash), p.txHash, p.failedEvent(0))
		}
		return nil
	})
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return nil // another relay signed a payout with that nonce first: claim again at the next step
	}
	if err != nil {
		return err
	}
	w.cfg.Metrics.paying(len(signed))
	for _, p := range refused {
		w.log.Warn("refund not paid: its recipient refuses the payout", "refund", p.id, "to", p.recipient, "reason", p.failure)
	}
	for _, p := range signed {
		w.log.Info("paying refund", "refund", p.id, "payout", p.hash, "to", p.recipient, "amount", p.amount)
		if err := w.send(ctx, p); err != nil {
			w.log.Warn("payout not accepted by the node; it is sent again later", "refund", p.id, "payout", p.hash, "error", err)
		}
	}
	return nil
}

// claim signs a payout for each PENDING refund of a block at or below
// safe and stores it with the refund (PAYING). A refund whose recipient
// refuses the payout is FAILED instead (refused); one whose gas cannot be
// estimated now stays PENDING for the next step.
func (w *Watcher) claim(ctx context.Context, tx pgx.Tx, safe uint64) (signed, refused []payout, err error) {
	rows, err := tx.Query(ctx, `SELECT refund_id, tx_hash, bundle_hash, originator, recipient, amount_wei::text, percent, block_number, block_hash
		FROM orderflow_refunds WHERE status = 'PENDING' AND block_number <= $1
		ORDER BY created_at, refund_id LIMIT 32 FOR UPDATE SKIP LOCKED`, safe)
	if err != nil {
		return nil, nil, fmt.Errorf("claim refunds: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payout, error) {
		var p payout
		return p, r.Scan(&p.id, &p.txHash, &p.bundle, &p.originator, &p.recipient, &p.amount, &p.percent, &p.block, &p.blockHash)
	})
	if err != nil || len(list) == 0 {
		return nil, nil, err
	}
	nonce, err := w.nextNonce(ctx, tx)
	if err != nil {
		return nil, nil, err
	}
	tip, err := w.chain.SuggestGasTipCap(ctx)
	if err != nil {
		tip = big.NewInt(1_000_000_000)
	}
	for _, p := range list {
		amount, ok := new(big.Int).SetString(p.amount, 10)
		if !ok {
			return nil, nil, fmt.Errorf("refund %s: amount %q", p.id, p.amount)
		}
		gas, refusal, err := w.payoutGas(ctx, p, amount)
		if err != nil {
			w.log.Warn("payout gas not known yet; the refund waits", "refund", p.id, "error", err)
			continue
		}
		if refusal != "" {
			p.failure = refusal
			if _, err := tx.Exec(ctx, `UPDATE orderflow_refunds SET status = 'FAILED', failure = $2, updated_at = now() WHERE refund_id = $1`,
				p.id, refusal); err != nil {
				return nil, nil, fmt.Errorf("record refused payout: %w", err)
			}
			refused = append(refused, p)
			continue
		}
		if p.tx, err = w.sign(p, amount, nonce, tip, gas); err != nil {
			return nil, nil, err
		}
		raw, err := p.tx.MarshalBinary()
		if err != nil {
			return nil, nil, err
		}
		p.status, p.hash = "PAYING", lowerHash(p.tx.Hash())
		if _, err := tx.Exec(ctx, `UPDATE orderflow_refunds SET status = 'PAYING', payout_tx_hash = $2, payout_from = $3,
			payout_nonce = $4, payout_raw = $5, updated_at = now() WHERE refund_id = $1`,
			p.id, p.hash, strings.ToLower(w.payer().Hex()), int64(nonce), raw); err != nil {
			return nil, nil, fmt.Errorf("store payout: %w", err)
		}
		signed = append(signed, p)
		nonce++
	}
	return signed, refused, nil
}

// maxPayoutGas bounds what one payout may spend. A plain transfer takes
// 21,000; a contract wallet's receive (a Safe's emits an event) a few
// thousand more. A recipient that needs more is refused rather than paid
// with the payer's gas.
const maxPayoutGas = 100_000

// payoutGas is the gas limit of a payout of amount to p's recipient,
// estimated by the node: 21,000 to an account without code, the estimate
// and a fifth more (for state that changes before inclusion) to a
// contract. refusal says why the recipient cannot be paid (its receive
// reverts, or needs more than maxPayoutGas); err means the node could not
// tell now.
func (w *Watcher) payoutGas(ctx context.Context, p payout, amount *big.Int) (gas uint64, refusal string, err error) {
	to := common.HexToAddress(p.recipient)
	est, err := w.chain.EstimateGas(ctx, ethereum.CallMsg{From: w.payer(), To: &to, Value: amount})
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "revert") {
			return 0, "the recipient's receive reverts: " + err.Error(), nil
		}
		return 0, "", fmt.Errorf("estimate payout gas of refund %s: %w", p.id, err)
	}
	if est > 21_000 {
		est += est / 5
	}
	if est > maxPayoutGas {
		return 0, fmt.Sprintf("the recipient needs about %d gas to receive a payout, more than the %d a payout may spend", est, maxPayoutGas), nil
	}
	return est, "", nil
}

// nextNonce is the payer's next nonce: the chain's pending nonce, or past
// the payouts stored in flight if the node does not know them all (they
// wait to be sent again).
func (w *Watcher) nextNonce(ctx context.Context, tx pgx.Tx) (uint64, error) {
	pending, err := w.chain.PendingNonceAt(ctx, w.payer())
	if err != nil {
		return 0, fmt.Errorf("payer nonce: %w", err)
	}
	var stored *int64
	if err := tx.QueryRow(ctx, `SELECT max(payout_nonce) FROM orderflow_refunds WHERE payout_from = $1 AND status IN ('PAYING', 'PAID')`,
		strings.ToLower(w.payer().Hex())).Scan(&stored); err != nil {
		return 0, fmt.Errorf("stored payout nonces: %w", err)
	}
	if stored != nil && uint64(*stored) >= pending {
		return uint64(*stored) + 1, nil
	}
	return pending, nil
}

func (w *Watcher) sign(p payout, amount *big.Int, nonce uint64, tip *big.Int, gas uint64) (*types.Transaction, error) {
	to := common.HexToAddress(p.recipient)
	feeCap := new(big.Int).Add(new(big.Int).Mul(tip, big.NewInt(2)), big.NewInt(100_000_000_000))
	tx, err := types.SignNewTx(w.cfg.PayerKey, types.LatestSignerForChainID(w.cfg.ChainID), &types.DynamicFeeTx{
		ChainID: w.cfg.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &to, Value: amount,
	})
	if err != nil {
		return nil, fmt.Errorf("sign payout of %s: %w", p.id, err)
	}
	return tx, nil
}

// send broadcasts a stored payout; once the node has it a PAYING refund
// is PAID. Either way the payout is sent again after Resend unless it is
// in a block by then.
func (w *Watcher) send(ctx context.Context, p payout) error {
	if err := w.chain.SendTransaction(ctx, p.tx); err != nil && !alreadyKnown(err) {
		if _, uerr := w.pool.Exec(ctx, `UPDATE orderflow_refunds SET updated_at = now() WHERE refund_id = $1 AND status IN ('PAYING', 'PAID')`, p.id); uerr != nil {
			w.log.Warn("record payout attempt", "refund", p.id, "error", uerr)
		}
		return fmt.Errorf("send payout %s of refund %s: %w", p.hash, p.id, err)
	}
	return w.decide(ctx, func(tx pgx.Tx, evs *events) error {
		tag, err := tx.Exec(ctx, `UPDATE orderflow_refunds SET status = 'PAID', updated_at = now()
			WHERE refund_id = $1 AND status IN ('PAYING', 'PAID')`, p.id)
		if err != nil {
			return fmt.Errorf("record payout sent: %w", err)
		}
		if tag.RowsAffected() > 0 && p.status == "PAYING" {
			evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, p.eventID(topics.RefundPaid, p.block, p.blockHash), p.txHash,
				p.event(topics.RefundPaid, 0))
		}
		return nil
	})
}

func alreadyKnown(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "already known") || strings.Contains(s, "already imported")
}

// resend handles the payouts not yet in an applied block, lowest nonce
// first: one the node has a receipt for is CONFIRMED; the others are sent
// again as stored. A payout that fails to send stays as it is and is
// tried again at the next step.
func (w *Watcher) resend(ctx context.Context) error {
	rows, err := w.pool.Query(ctx, `SELECT refund_id, tx_hash, bundle_hash, originator, recipient, amount_wei::text, percent, block_number,
		block_hash, status, payout_tx_hash, payout_raw FROM orderflow_refunds
		WHERE status IN ('PAYING', 'PAID') AND payout_raw IS NOT NULL AND updated_at < $1
		ORDER BY payout_from, payout_nonce LIMIT 64`, time.Now().Add(-w.cfg.Resend))
	if err != nil {
		return fmt.Errorf("read payouts in flight: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payout, error) {
		var p payout
		var raw []byte
		if err := r.Scan(&p.id, &p.txHash, &p.bundle, &p.originator, &p.recipient, &p.amount, &p.percent, &p.block,
			&p.blockHash, &p.status, &p.hash, &raw); err != nil {
			return p, err
		}
		p.tx = new(types.Transaction)
		return p, p.tx.UnmarshalBinary(raw)
	})
	if err != nil {
		return fmt.Errorf("read payouts in flight: %w", err)
	}
	for _, p := range list {
		rc, err := w.chain.TransactionReceipt(ctx, p.tx.Hash())
		if err == nil {
			if err := w.confirm(ctx, p, rc); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, ethereum.NotFound) {
			return fmt.Errorf("payout receipt %s: %w", p.hash, err)
		}
		if err := w.send(ctx, p); err != nil {
			w.log.Warn("payout not accepted by the node; it is sent again later", "refund", p.id, "payout", p.hash, "error", err)
		}
	}
	return nil
}

// confirm records a payout found by its receipt: CONFIRMED, or FAILED
// when it reverted in its block.
func (w *Watcher) confirm(ctx context.Context, p payout, rc *types.Receipt) error {
	block := rc.BlockNumber.Uint64()
	status, failure := outcome(rc)
	return w.decide(ctx, func(tx pgx.Tx, evs *events) error {
		tag, err := tx.Exec(ctx, `UPDATE orderflow_refunds SET status = $3, failure = $4, payout_block = $2, updated_at = now()
			WHERE refund_id = $1 AND status IN ('PAYING', 'PAID')`, p.id, block, status, failure)
		if err != nil {
			return fmt.Errorf("confirm payout: %w", err)
		}
		if tag.RowsAffected() > 0 {
			ev := p.event(status, block)
			ev.Reason = failure
			evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, p.eventID(status, block, lowerHash(rc.BlockHash)), p.txHash, ev)
		}
		return nil
	})
}

// outcome is the refund status a payout's receipt gives, and the reason
// of a failure.
func outcome(rc *types.Receipt) (status, failure string) {
	if rc.Status == types.ReceiptStatusFailed {
		return topics.RefundFailed, fmt.Sprintf("the payout reverted in block %d", rc.BlockNumber.Uint64())
	}
	return topics.RefundConfirmed, ""
}

// confirmPayouts records the payouts among a block's transactions by
// their receipts: CONFIRMED, or FAILED when one reverted.
func (w *Watcher) confirmPayouts(ctx context.Context, tx pgx.Tx, n uint64, blockHash string, hashes []string, evs *events) error {
	rows, err := tx.Query(ctx, `SELECT refund_id, tx_hash, bundle_hash, payout_tx_hash FROM orderflow_refunds
		WHERE payout_tx_hash = ANY($1) AND status IN ('PAYING', 'PAID')`, hashes)
	if err != nil {
		return fmt.Errorf("confirm payouts: %w", err)
	}
	type done struct{ id, tx, bundle, payout string }
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (done, error) {
		var d done
		return d, r.Scan(&d.id, &d.tx, &d.bundle, &d.payout)
	})
	if err != nil {
		return fmt.Errorf("confirm payouts: %w", err)
	}
	for _, d := range list {
		rc, err := w.chain.TransactionReceipt(ctx, common.HexToHash(d.payout))
		if err != nil {
			return fmt.Errorf("receipt of payout %s: %w", d.payout, err)
		}
		status, failure := outcome(rc)
		if _, err := tx.Exec(ctx, `UPDATE orderflow_refunds SET status = $2, failure = $3, payout_block = $4, updated_at = now()
			WHERE refund_id = $1`, d.id, status, failure, n); err != nil {
			return fmt.Errorf("confirm payouts: %w", err)
		}
		evs.add(topics.OrderflowRefunds, topics.TypeOrderflowRefund, eventID("rf", refundSubject(d.tx, d.bundle), status, n, blockHash), d.tx, topics.OrderflowRefund{
			RefundID: d.id, TxHash: d.tx, BundleHash: d.bundle, Status: status, PayoutTxHash: d.payout, PayoutBlock: n, Reason: failure, At: time.Now().UnixMilli()})
	}
	return nil
}
