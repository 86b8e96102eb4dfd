package flow

import (
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

// countingChain is the chain's client, counting the balance reads.
type countingChain struct {
	ChainAccounts
	balanceReads atomic.Int64
}

func (c *countingChain) BalanceAt(ctx context.Context, a common.Address, block *big.Int) (*big.Int, error) {
	c.balanceReads.Add(1)
	return c.ChainAccounts.BalanceAt(ctx, a, block)
}

// fundedChain starts go-ethereum's simulated chain (chain id 1337, as the
// dev chain runs it) with funded holding 1 ETH.
func fundedChain(t *testing.T, funded *ecdsa.PrivateKey) *simulated.Backend {
	t.Helper()
	eth := big.NewInt(1_000_000_000_000_000_000)
	sim := simulated.NewBackend(types.GenesisAlloc{crypto.PubkeyToAddress(funded.PublicKey): {Balance: eth}})
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

func txWith(t *testing.T, key *ecdsa.PrivateKey, nonce uint64, value *big.Int) string {
	t.Helper()
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(testChain), &types.DynamicFeeTx{
		ChainID: testChain, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return "0x" + common.Bytes2Hex(b)
}

func assertRefused(t *testing.T, a answer, reason string) {
	t.Helper()
	if a.status != http.StatusOK || a.code != jsonrpc.CodeInvalidRequest || !strings.Contains(a.message, reason) {
		t.Fatalf("answer %+v, want -32600 %q", a, reason)
	}
}

// TestOriginatorSenderMustPay: with a chain, a sender whose balance is
// below what its transactions may cost, or whose nonce is used already or
// more than the gap ahead of its account's, is refused with -32600 and
// nothing is published; a sender that can pay is accepted, and its
// account is read from the chain once per TTL.
func TestOriginatorSenderMustPay(t *testing.T) {
	funded, empty := newKey(t), newKey(t)
	sim := fundedChain(t, funded)
	chain := &countingChain{ChainAccounts: sim.Client()}
	srv, published := originatorServer(t, Config{Funds: NewFunds(FundsConfig{TTL: time.Hour}, chain, slog.New(slog.NewTextHandler(io.Discard, nil)))})
	oneETH := big.NewInt(1_000_000_000_000_000_000)
	fee := big.NewInt(21000 * 100e9)
	emptyAddr := strings.ToLower(crypto.PubkeyToAddress(empty.PublicKey).Hex())

	assertRefused(t, post(t, srv.URL, MethodSendPrivateRawTransaction, txWith(t, empty, 0, big.NewInt(1)), nil),
		"sender "+emptyAddr+" has 0 wei, less than the 2100000000000001 wei")
	assertRefused(t, post(t, srv.URL, of.MethodSendBundle, map[string]any{"txs": []string{txWith(t, empty, 0, big.NewInt(0))}}, nil),
		"has 0 wei")
	assertRefused(t, post(t, srv.URL, MethodSendRawTransaction, txWith(t, funded, 0, oneETH), nil),
		"less than the")
	assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, txWith(t, funded, 0, new(big.Int).Sub(oneETH, fee)), nil))
	// Two transactions of one sender in a bundle must be paid together.
	half := new(big.Int).Div(oneETH, big.NewInt(2))
	assertRefused(t, post(t, srv.URL, of.MethodSendBundle, map[string]any{"txs": []string{txWith(t, funded, 1, half), txWith(t, funded, 2, half)}}, nil),
		"its transactions may cost")
	assertAccepted(t, post(t, srv.URL, MethodSendPrivateTransaction, map[string]any{"tx": txWith(t, funded, DefaultMaxNonceGap, big.NewInt(1))}, nil))
	assertRefused(t, post(t, srv.URL, MethodSendRawTransaction, txWith(t, funded, DefaultMaxNonceGap+1, big.NewInt(1)), nil),
		"is more than 64 ahead of the account's nonce 0")
	if n := published.count(); n != 2 {
		t.Fatalf("%d records published, want the 2 accepted", n)
	}
	if n := chain.balanceReads.Load(); n != 2 {
		t.Fatalf("%d balance reads for 2 senders, want one each within the TTL", n)
	}
}

// TestOriginatorUsedNonce: a transaction whose nonce the chain already
// counts for its sender can never be included and is refused.
func TestOriginatorUsedNonce(t *testing.T) {
	funded := newKey(t)
	sim := fundedChain(t, funded)
	tx, err := types.SignNewTx(funded, types.LatestSignerForChainID(testChain), &types.DynamicFeeTx{ChainID: testChain, Nonce: 0,
		GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &common.Address{0xaa}, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Client().SendTransaction(t.Context(), tx); err != nil {
		t.Fatal(err)
	}
	sim.Commit()
	srv, published := originatorServer(t, Config{Funds: NewFunds(FundsConfig{}, sim.Client(), slog.New(slog.NewTextHandler(io.Discard, nil)))})
	assertRefused(t, post(t, srv.URL, MethodSendRawTransaction, txWith(t, funded, 0, big.NewInt(2)), nil),
		"nonce 0 of sender "+strings.ToLower(crypto.PubkeyToAddress(funded.PublicKey).Hex())+" is already used: the account's nonce is 1")
	assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, txWith(t, funded, 1, big.NewInt(2)), nil))
	if n := published.count(); n != 1 {
		t.Fatalf("%d records published, want 1", n)
	}
}
