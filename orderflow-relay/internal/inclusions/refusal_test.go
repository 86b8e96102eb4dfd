package inclusions_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
)

// Runtime code of recipient contracts: one whose receive emits an event,
// as a contract wallet's does (a Safe's SafeReceived), so a payout needs
// more than the 21,000 gas of a plain transfer; one whose receive always
// reverts.
var (
	logsOnReceive    = []byte{0x60, 0x00, 0x60, 0x00, 0xa0, 0x00} // PUSH1 0 PUSH1 0 LOG0 STOP
	revertsOnReceive = []byte{0x60, 0x00, 0x60, 0x00, 0xfd}       // PUSH1 0 PUSH1 0 REVERT
)

// deploy creates a contract with the given runtime code from the
// searcher's account and returns its address.
func (e *env) deploy(t *testing.T, runtime []byte) common.Address {
	t.Helper()
	n := byte(len(runtime))
	// PUSH1 n PUSH1 12 PUSH1 0 CODECOPY PUSH1 n PUSH1 0 RETURN, then the code.
	initCode := append([]byte{0x60, n, 0x60, 0x0c, 0x60, 0x00, 0x39, 0x60, n, 0x60, 0x00, 0xf3}, runtime...)
	nonce := e.nonce(t, e.searcher)
	tx, err := types.SignNewTx(e.searcher, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 200_000, Data: initCode})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client().SendTransaction(t.Context(), tx); err != nil {
		t.Fatal(err)
	}
	e.sim.Commit()
	addr := crypto.CreateAddress(crypto.PubkeyToAddress(e.searcher.PublicKey), nonce)
	if code, err := e.client().CodeAt(t.Context(), addr, nil); err != nil || len(code) != len(runtime) {
		t.Fatalf("contract at %s: code %x, %v", addr, code, err)
	}
	return addr
}

// refundTo makes a backrun whose refund goes to recipient, mines it and
// enough blocks for the refund to be paid and its payout confirmed.
func (e *env) refundTo(t *testing.T, w *inclusions.Watcher, recipient common.Address) *types.Transaction {
	t.Helper()
	e.recipient = recipient
	step(t, w)
	_, search := e.backrun(t)
	e.mine(t, w, 6)
	return search
}

func (e *env) failure(t *testing.T) string {
	t.Helper()
	var f string
	if err := e.pool.QueryRow(t.Context(), `SELECT failure FROM orderflow_refunds`).Scan(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// A refund to a contract whose receive needs more than 21,000 gas is paid
// with the node's estimate, and the contract gets what it is owed.
func TestRefundToAContractWalletIsPaid(t *testing.T) {
	e := setup(t)
	w := e.watcher(e.client(), 2)
	wallet := e.deploy(t, logsOnReceive)
	search := e.refundTo(t, w, wallet)
	got := e.refunds(t)
	if len(got) != 1 || got[0].Status != "CONFIRMED" || got[0].PayoutBlock == nil {
		t.Fatalf("refund to a contract wallet: %+v (%s)", got, e.failure(t))
	}
	if b, owed := e.balance(t, wallet), e.owed(t, search); b.Cmp(owed) != 0 {
		t.Fatalf("wallet got %s, owed %s", b, owed)
	}
}

// A refund to a contract whose receive reverts is FAILED with the reason
// and no payout is sent, so the payer spends nothing on it.
func TestRefundToARefusingContractFails(t *testing.T) {
	e := setup(t)
	w := e.watcher(e.client(), 2)
	refuser := e.deploy(t, revertsOnReceive)
	e.refundTo(t, w, refuser)
	got := e.refunds(t)
	if len(got) != 1 || got[0].Status != "FAILED" || got[0].Payout != "" || !strings.Contains(e.failure(t), "reverts") {
		t.Fatalf("refund to a refusing contract: %+v (%q)", got, e.failure(t))
	}
	if n := e.payouts(t); n != 0 {
		t.Fatalf("the payer sent %d transactions", n)
	}
}

// underestimating answers every estimate with 21,000 gas, as a node would
// whose state changed before the payout was mined.
type underestimating struct{ inclusions.Chain }

func (underestimating) EstimateGas(context.Context, ethereum.CallMsg) (uint64, error) {
	return 21_000, nil
}

// A payout that reverts in its block (here: sent with too little gas) is
// FAILED by its receipt, with the block, not CONFIRMED.
func TestPayoutRevertedInItsBlockFails(t *testing.T) {
	e := setup(t)
	w := e.watcher(underestimating{e.client()}, 2)
	wallet := e.deploy(t, logsOnReceive)
	e.refundTo(t, w, wallet)
	got := e.refunds(t)
	if len(got) != 1 || got[0].Status != "FAILED" || got[0].Payout == "" || got[0].PayoutBlock == nil ||
		!strings.Contains(e.failure(t), "reverted in block") {
		t.Fatalf("refund whose payout reverted: %+v (%q)", got, e.failure(t))
	}
	if n := e.payouts(t); n != 1 {
		t.Fatalf("the payer sent %d transactions", n)
	}
	if b := e.balance(t, wallet); b.Sign() != 0 {
		t.Fatalf("the wallet got %s from a reverted payout", b)
	}
}
