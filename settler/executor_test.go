package settler_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

var ether = big.NewInt(1_000_000_000_000_000_000)

// payoutChain is a simulated chain with the collateral contract, holding
// 3 ETH, paid out by the operator key.
type payoutChain struct {
	sim      *simulated.Backend
	operator *ecdsa.PrivateKey
	contract common.Address
	binding  *collateral.Collateral
}

func newPayoutChain(t *testing.T) *payoutChain {
	t.Helper()
	op, _ := crypto.GenerateKey()
	funds := new(big.Int).Mul(ether, big.NewInt(1000))
	sim := simulated.NewBackend(types.GenesisAlloc{crypto.PubkeyToAddress(op.PublicKey): {Balance: funds}})
	t.Cleanup(func() { _ = sim.Close() })
	auth, _ := bind.NewKeyedTransactorWithChainID(op, big.NewInt(1337))
	addr, _, c, err := collateral.DeployCollateral(auth, sim.Client(), auth.From)
	if err != nil {
		t.Fatal(err)
	}
	sim.Commit()
	auth.Value = new(big.Int).Mul(ether, big.NewInt(3))
	if _, err := c.Deposit(auth); err != nil {
		t.Fatal(err)
	}
	sim.Commit()
	return &payoutChain{sim: sim, operator: op, contract: addr, binding: c}
}

func (p *payoutChain) executor(t *testing.T, pool *pgxpool.Pool, cl *kgo.Client) *settler.Executor {
	t.Helper()
	e, err := settler.NewExecutor(settler.WithdrawalConfig{ChainID: 1337, Contract: p.contract, OperatorKey: p.operator, Confirmations: 2},
		p.sim.Client(), pool, cl, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (p *payoutChain) balance(t *testing.T, addr string) *big.Int {
	b, err := p.sim.Client().BalanceAt(context.Background(), common.HexToAddress(addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// debitedRequest stores a withdrawal request of user 0 (reserved as
// ingress does) and has the settler debit it.
func debitedRequest(t *testing.T, pool *pgxpool.Pool, cl *kgo.Client, acc userAccounts, qty string) int64 {
	t.Helper()
	ctx := t.Context()
	var id int64
	if err := pool.QueryRow(ctx, `
		WITH r AS (UPDATE account_balances SET locked = locked + $3::numeric + 0.0001 WHERE account_id = $2 AND token_id = 1)
		INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address)
		VALUES ($1, $2, 1, 1337, $3::numeric, 0.0001, $4) RETURNING request_id`, acc.user, acc.current, qty, address(0)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, []*kgo.Record{record(t, topics.LedgerCommands, topics.UserKey(acc.user), topics.TypeLedgerWithdraw,
		"withdraw-"+itoa(id), topics.LedgerWithdraw{RequestID: id, UserID: acc.user, AccountID: acc.current, TokenID: 1,
			ChainID: 1337, Quantity: qty, Fee: "0.0001", ToAddress: address(0)})})
	poll.Until(t, "request debited", func() bool { return requestStatus(t, pool, id) == 1 })
	return id
}

func requestStatus(t *testing.T, pool *pgxpool.Pool, id int64) int {
	var s int
	if err := pool.QueryRow(context.Background(), `SELECT status FROM withdraw_requests WHERE request_id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func itoa(v int64) string { return big.NewInt(v).String() }

// runUntil steps the executor and makes a block until every request has
// its final status.
func runUntil(t *testing.T, p *payoutChain, pool *pgxpool.Pool, e *settler.Executor, want map[int64]int) {
	t.Helper()
	poll.Until(t, "final withdrawal statuses", func() bool {
		if err := e.Step(t.Context()); err != nil {
			t.Logf("step: %v", err)
		}
		p.sim.Commit()
		for id, s := range want {
			if requestStatus(t, pool, id) != s {
				return false
			}
		}
		return true
	})
}

// withdrawalFixture is a settler running until the test ends, with user 0
// holding 200 ETH.
func withdrawalFixture(t *testing.T) (*pgxpool.Pool, *kgo.Client, userAccounts, *payoutChain) {
	t.Helper()
	b, cl := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	startSettler(t, t.Context(), b.Addrs(), pool, 100)
	produce(t, cl, []*kgo.Record{depositRecord(t, 1, 0, "200")})
	poll.Until(t, "deposit credited", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == 1 })
	return pool, cl, accounts(t, pool, 1)[0], newPayoutChain(t)
}

func TestExecutorPaysConfirmsAndReturnsFailedPayouts(t *testing.T) {
	pool, cl, acc, chain := withdrawalFixture(t)
	before := chain.balance(t, address(0))
	paid := debitedRequest(t, pool, cl, acc, "1.25")
	// The contract holds 3 ETH: a 50 ETH payout reverts on chain.
	reverted := debitedRequest(t, pool, cl, acc, "50")
	runUntil(t, chain, pool, chain.executor(t, pool, cl), map[int64]int{paid: 10, reverted: 104})

	got := new(big.Int).Sub(chain.balance(t, address(0)), before)
	if want := new(big.Int).Div(new(big.Int).Mul(ether, big.NewInt(125)), big.NewInt(100)); got.Cmp(want) != 0 {
		t.Fatalf("recipient got %s wei, want %s", got, want)
	}
	var hash, remark string
	if err := pool.QueryRow(t.Context(), `SELECT coalesce(tx_hash, ''), remark FROM withdraw_requests WHERE request_id = $1`, reverted).Scan(&hash, &remark); err != nil {
		t.Fatal(err)
	}
	if hash == "" || remark == "" {
		t.Fatalf("failed request: tx %q remark %q", hash, remark)
	}
	// 200 - 1.25 - 0.0001 (the failed payout's amount and fee came back)
	var q, locked string
	if err := pool.QueryRow(t.Context(), `SELECT quantity::text, locked::text FROM account_balances WHERE account_id = $1 AND token_id = 1`, acc.current).Scan(&q, &locked); err != nil {
		t.Fatal(err)
	}
	if q != "198.7499" || locked != "0.0000" && locked != "0" {
		t.Fatalf("balance %s locked %s", q, locked)
	}
	if n := count(t, pool, `SELECT count(*) FROM withdraw_requests WHERE status = 10 AND tx_hash IS NOT NULL`); n != 1 {
		t.Fatalf("%d confirmed requests with a txHash", n)
	}
	mustAudit(t, pool)
}

// TestExecutorNeverPaysTwice covers the two crashes between sending a
// payout and recording it: a payout sent while nothing was stored, and a
// stored payout resent by a new executor.
func TestExecutorNeverPaysTwice(t *testing.T) {
	pool, cl, acc, chain := withdrawalFixture(t)
	before := chain.balance(t, address(0))
	lost := debitedRequest(t, pool, cl, acc, "1")
	stored := debitedRequest(t, pool, cl, acc, "0.5")

	// An executor sent lost's payout and died before storing anything;
	// the payout is still pending when the next executor starts.
	auth, _ := bind.NewKeyedTransactorWithChainID(chain.operator, big.NewInt(1337))
	auth.GasLimit = 1_000_000
	sent, err := chain.binding.Withdraw(auth, big.NewInt(lost), common.HexToAddress(address(0)), ether)
	if err != nil {
		t.Fatal(err)
	}
	// Another executor stored and sent stored's payout, then died.
	first := chain.executor(t, pool, cl)
	if err := first.Step(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Two restarts before anything is mined.
	for range 2 {
		if err := chain.executor(t, pool, cl).Step(t.Context()); err != nil {
			t.Logf("step: %v", err)
		}
	}
	runUntil(t, chain, pool, chain.executor(t, pool, cl), map[int64]int{lost: 10, stored: 10})

	got := new(big.Int).Sub(chain.balance(t, address(0)), before)
	if want := new(big.Int).Div(new(big.Int).Mul(ether, big.NewInt(15)), big.NewInt(10)); got.Cmp(want) != 0 {
		t.Fatalf("recipient got %s wei, want %s (each request once)", got, want)
	}
	var hash string
	if err := pool.QueryRow(t.Context(), `SELECT tx_hash FROM withdraw_requests WHERE request_id = $1`, lost).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if !equalFold(hash, sent.Hash().Hex()) {
		t.Fatalf("lost request records tx %s, the payment was %s", hash, sent.Hash().Hex())
	}
	it, err := chain.binding.FilterWithdrawal(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	payments := 0
	for it.Next() {
		payments++
	}
	if payments != 2 {
		t.Fatalf("%d Withdrawal logs, want 2", payments)
	}
	mustAudit(t, pool)
}

func equalFold(a, b string) bool { return common.HexToHash(a) == common.HexToHash(b) }

// TestExecutorConfirmsAPaymentItFindsBeforeSigning covers a request whose
// payout is already mined when the executor first looks at it (its stored
// payout lost, or cleared by an operator after it was mined): the payment
// found on chain is recorded and, once deep, confirmed.
func TestExecutorConfirmsAPaymentItFindsBeforeSigning(t *testing.T) {
	pool, cl, acc, chain := withdrawalFixture(t)
	id := debitedRequest(t, pool, cl, acc, "1")
	auth, _ := bind.NewKeyedTransactorWithChainID(chain.operator, big.NewInt(1337))
	sent, err := chain.binding.Withdraw(auth, big.NewInt(id), common.HexToAddress(address(0)), ether)
	if err != nil {
		t.Fatal(err)
	}
	chain.sim.Commit()
	runUntil(t, chain, pool, chain.executor(t, pool, cl), map[int64]int{id: 10})

	var hash string
	if err := pool.QueryRow(t.Context(), `SELECT tx_hash FROM withdraw_requests WHERE request_id = $1`, id).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if !equalFold(hash, sent.Hash().Hex()) {
		t.Fatalf("request records tx %s, the payment was %s", hash, sent.Hash().Hex())
	}
	mustAudit(t, pool)
}
