package inclusions_test

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/topics"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestResumesFromCursorAfterLongOutage stops following the chain for 100
// blocks (more than a watcher without a cursor looks back), the
// backrun's the first of them: a new watcher on the same database
// resumes after the stored cursor and pays the refund.
func TestResumesFromCursorAfterLongOutage(t *testing.T) {
	e := setup(t)
	e.mine(t, e.watcher(e.client(), 1), 3)
	origin, search := e.backrun(t)
	e.sim.Commit()
	for range 99 {
		e.sim.Commit()
	}
	restarted := e.watcher(e.client(), 1)
	step(t, restarted)
	st, block := e.status(t, "orderflow_txs", "hash", origin)
	rc, err := e.client().TransactionReceipt(t.Context(), search.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if st != "INCLUDED" || block == nil || *block != rc.BlockNumber.Int64() {
		t.Fatalf("originator tx %s in %v, backrun in %d", st, block, rc.BlockNumber)
	}
	var cursor int64
	if err := e.pool.QueryRow(t.Context(), `SELECT max(number) FROM orderflow_chain_blocks`).Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if head, _ := e.client().BlockNumber(t.Context()); cursor != int64(head) {
		t.Fatalf("cursor %d, head %d", cursor, head)
	}
	e.mine(t, restarted, 2)
	owed := e.owed(t, search)
	if got := e.refunds(t); len(got) != 1 || got[0].Status != "CONFIRMED" || got[0].Amount != owed.String() {
		t.Fatalf("refunds %+v", got)
	}
	if b := e.balance(t, e.recipient); b.Cmp(owed) != 0 || e.payouts(t) != 1 {
		t.Fatalf("recipient got %s in %d payouts, owed %s", b, e.payouts(t), owed)
	}
}

// replace puts a transaction with tx's nonce and a higher fee in the
// pool once the pool has taken in the fork (before that, the nonce is
// used on the old branch), so that the new branch never includes tx.
func (e *env) replace(t *testing.T, tx *types.Transaction) {
	t.Helper()
	with := e.transfer(t, e.searcher, tx.Nonce(), common.HexToAddress("0xe3"), 2*tx.GasTipCap().Int64(), 2*tx.GasFeeCap().Int64())
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.client().SendTransaction(t.Context(), with)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "nonce too low") || time.Now().After(deadline) {
			t.Fatalf("replace %s: %v", tx.Hash().Hex(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReorgBeforeConfirmationsPaysNothing includes a backrun in a block
// that a reorganisation orphans before the refund has its confirmations;
// the new branch carries the originator transaction but not the backrun.
// The refund is withdrawn and nothing is ever paid; the originator
// transaction is included in the new branch's block.
func TestReorgBeforeConfirmationsPaysNothing(t *testing.T) {
	e := setup(t)
	w := e.watcher(e.client(), 2)
	origin, search, orphan := e.orphanedBackrun(t, w)
	e.replace(t, search)
	e.mine(t, w, 5)
	if got := e.refunds(t); len(got) != 0 {
		t.Fatalf("refunds after the reorganisation: %+v", got)
	}
	st, block := e.status(t, "orderflow_txs", "hash", origin)
	var blockHash string
	if err := e.pool.QueryRow(t.Context(), `SELECT block_hash FROM orderflow_txs WHERE hash = $1`, origin).Scan(&blockHash); err != nil {
		t.Fatal(err)
	}
	if st != "INCLUDED" || block == nil || blockHash == orphan || blockHash != e.canonical(t, *block) {
		t.Fatalf("originator tx %s in %v (%s), orphaned %s", st, block, blockHash, orphan)
	}
	if st, block := e.status(t, "orderflow_bundles", "backrun_of", origin); st != "FORWARDED" || block != nil {
		t.Fatalf("backrun bundle %s in %v", st, block)
	}
	if n, b := e.payouts(t), e.balance(t, e.recipient); n != 0 || b.Sign() != 0 {
		t.Fatalf("payer sent %d transactions, recipient got %s", n, b)
	}
}

// TestReorgOfThePayoutBlock orphans the block that confirmed a payout and
// the one before it: the refund's own block stays canonical, so the
// refund stands, its payout is PAID again and then CONFIRMED in the new
// branch, one block lower than before; the recipient is paid once. The
// refund's events say so, each confirmation with an id of its own.
func TestReorgOfThePayoutBlock(t *testing.T) {
	e := setup(t)
	cl, _ := kafkatest.Start(t)
	w := e.watcherTo(e.client(), 1, cl)
	step(t, w)
	_, search := e.backrun(t)
	fork := e.sim.Commit() // the backrun's block
	step(t, w)
	e.mine(t, w, 1) // its confirmation: paid
	got := e.refunds(t)
	if len(got) != 1 || got[0].Status != "PAID" {
		t.Fatalf("refund %+v", got)
	}
	e.mine(t, w, 1)
	if got = e.refunds(t); got[0].Status != "CONFIRMED" || *got[0].PayoutBlock != got[0].Block+2 {
		t.Fatalf("refund %+v", got)
	}
	if err := e.sim.Fork(fork); err != nil {
		t.Fatal(err)
	}
	e.mine(t, w, 3)
	rc, err := e.client().TransactionReceipt(t.Context(), common.HexToHash(got[0].Payout))
	if err != nil {
		t.Fatal(err)
	}
	got = e.refunds(t)
	if got[0].Status != "CONFIRMED" || *got[0].PayoutBlock != got[0].Block+1 || *got[0].PayoutBlock != rc.BlockNumber.Int64() {
		t.Fatalf("refund after the reorganisation %+v, payout in %d", got, rc.BlockNumber)
	}
	owed := e.owed(t, search)
	if n, b := e.payouts(t), e.balance(t, e.recipient); n != 1 || b.Cmp(owed) != 0 {
		t.Fatalf("payer sent %d transactions, recipient got %s, owed %s", n, b, owed)
	}
	evs := readEvents(t, cl, topics.OrderflowRefunds)[got[0].TxHash()]
	if d := strings.Join(describe(evs), ", "); d != "PENDING, PAID, CONFIRMED, PAID reorg, CONFIRMED" {
		t.Fatalf("refund events %s", d)
	}
	if evs[2].id == evs[4].id || evs[1].id == evs[3].id {
		t.Fatalf("events repeat an id: %+v", evs)
	}
}

// orphanedBackrun includes a backrun in a block, checks its refund is
// owed, and forks the chain at the block before: the next Commit starts
// the new branch at the same height. It returns the originator
// transaction, the searcher's and the orphaned block's hash.
func (e *env) orphanedBackrun(t *testing.T, w *inclusions.Watcher) (origin string, search *types.Transaction, orphan string) {
	t.Helper()
	step(t, w)
	parent := e.sim.Commit()
	step(t, w)
	origin, search = e.backrun(t)
	orphan = strings.ToLower(e.sim.Commit().Hex())
	step(t, w)
	if got := e.refunds(t); len(got) != 1 || got[0].Status != "PENDING" || got[0].BlockHash != orphan {
		t.Fatalf("refund before the reorganisation: %+v", got)
	}
	if err := e.sim.Fork(parent); err != nil {
		t.Fatal(err)
	}
	return origin, search, orphan
}
