package deposits_test

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/deposits"
	"blockspace.exchange/platform/chain/collateral"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

type env struct {
	sim      *simulated.Backend
	contract *collateral.Collateral
	address  common.Address
	auth     *bind.TransactOpts
	cl       *kgo.Client
	brokers  []string
}

func setup(t *testing.T) *env {
	t.Helper()
	key, _ := crypto.GenerateKey()
	from := crypto.PubkeyToAddress(key.PublicKey)
	eth, _ := new(big.Int).SetString("1000000000000000000000", 10)
	sim := simulated.NewBackend(types.GenesisAlloc{from: {Balance: eth}})
	t.Cleanup(func() { _ = sim.Close() })
	auth, err := bind.NewKeyedTransactorWithChainID(key, big.NewInt(1337))
	if err != nil {
		t.Fatal(err)
	}
	addr, _, c, err := collateral.DeployCollateral(auth, sim.Client(), from)
	if err != nil {
		t.Fatal(err)
	}
	sim.Commit()
	cl, brokers := kafkatest.Start(t)
	return &env{sim: sim, contract: c, address: addr, auth: auth, cl: cl, brokers: brokers}
}

func (e *env) deposit(t *testing.T, wei int64) *types.Transaction {
	t.Helper()
	opts := *e.auth
	opts.Value = big.NewInt(wei)
	tx, err := e.contract.Deposit(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// published reads every deposit on funding-events. It first lists the
// end offsets, then reads until each partition reaches its end: the
// watcher's ProduceSync has returned, so all it published is below them,
// and the read waits for exactly those records however slow the machine
// is. Deposits come back in chain order.
func (e *env) published(t *testing.T) []topics.DepositObserved {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out []topics.DepositObserved
	for _, r := range kafkatest.ReadToEnd(ctx, t, e.cl, topics.FundingEvents) {
		ev, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		var d topics.DepositObserved
		if err := topics.DecodeFunding(ev, topics.TypeDepositObserved, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b topics.DepositObserved) int {
		return cmp.Or(cmp.Compare(a.BlockNumber, b.BlockNumber), cmp.Compare(a.LogIndex, b.LogIndex))
	})
	return out
}

func watcher(t *testing.T, e *env, confirmations uint64, pool *pgxpool.Pool) *deposits.Watcher {
	t.Helper()
	w, err := deposits.New(deposits.Config{ChainID: 1337, Contract: e.address, Confirmations: confirmations, MaxRange: 3},
		e.sim.Client(), pool, e.cl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func drain(t *testing.T, w *deposits.Watcher) {
	t.Helper()
	for {
		more, err := w.Step(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// TestReorgNeverCreditsAnOrphanedLog mines a deposit, reorganises it away
// one block deep before it has its confirmations, and checks that only the
// deposit on the canonical chain is published.
func TestReorgNeverCreditsAnOrphanedLog(t *testing.T) {
	e := setup(t)
	w := watcher(t, e, 2, pgtest.New(t, schema.Migrations()))
	parent := e.sim.Commit()
	tx := e.deposit(t, 5e17)
	e.sim.Commit()
	receipt, err := e.sim.Client().TransactionReceipt(t.Context(), tx.Hash())
	if err != nil {
		t.Fatal(err)
	}
	orphaned := receipt.BlockHash.Hex()
	drain(t, w) // the deposit has 0 confirmations: nothing yet
	if got := e.published(t); len(got) != 0 {
		t.Fatalf("published before confirmations: %v", got)
	}
	if err := e.sim.Fork(parent); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		e.sim.Commit()
	}
	drain(t, w)
	// The simulated chain may include the deposit again in the new branch;
	// what must never be published is the log of the orphaned block.
	for _, d := range e.published(t) {
		h, err := e.sim.Client().HeaderByNumber(t.Context(), new(big.Int).SetUint64(d.BlockNumber))
		if err != nil {
			t.Fatal(err)
		}
		if d.BlockHash == orphaned || d.BlockHash != h.Hash().Hex() {
			t.Fatalf("published a log of a non-canonical block: %+v", d)
		}
	}
	before := len(e.published(t))
	e.deposit(t, 7e17)
	for range 3 {
		e.sim.Commit()
	}
	drain(t, w)
	got := e.published(t)
	if len(got) != before+1 || got[before].Quantity != "0.7" || got[before].AmountWei != "700000000000000000" {
		t.Fatalf("published %+v", got)
	}
}

// TestResumesAfterRestart stops a watcher and starts another on the same
// database: it continues after the last processed block.
func TestResumesAfterRestart(t *testing.T) {
	e := setup(t)
	pool := pgtest.New(t, schema.Migrations())
	w := watcher(t, e, 1, pool)
	for i := range 5 {
		tx := e.deposit(t, int64(i+1)*1e16)
		e.sim.Commit()
		if r, err := e.sim.Client().TransactionReceipt(t.Context(), tx.Hash()); err != nil || r.Status != 1 {
			t.Fatalf("deposit %d: %v %+v", i, err, r)
		}
	}
	e.sim.Commit()
	drain(t, w)
	if n := len(e.published(t)); n != 5 {
		t.Fatalf("%d published", n)
	}
	w2 := watcher(t, e, 1, pool)
	e.deposit(t, 1e18)
	e.sim.Commit()
	e.sim.Commit()
	drain(t, w2)
	got := e.published(t)
	if len(got) != 6 || got[5].Quantity != "1" {
		t.Fatalf("published %d: %+v", len(got), got)
	}
}

// A deposit's envelope id is deposit-<chain>-<tx>-<log> on a real chain;
// a watcher of a chain incarnation (the dev chain, new at every start)
// puts the incarnation in it, so the same transaction replayed on the
// next incarnation is a new deposit to the settler, not a duplicate.
func TestDepositIDNamesTheChainIncarnation(t *testing.T) {
	e := setup(t)
	tx := e.deposit(t, 1e16)
	e.sim.Commit()
	e.sim.Commit()
	pool := pgtest.New(t, schema.Migrations())
	ids := func(instance string) []string {
		t.Helper()
		if _, err := pool.Exec(t.Context(), `DELETE FROM chain_cursors`); err != nil {
			t.Fatal(err)
		}
		w, err := deposits.New(deposits.Config{ChainID: 1337, Contract: e.address, Confirmations: 1, Instance: instance},
			e.sim.Client(), pool, e.cl, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var out []string
		for _, r := range kafkatest.ReadToEnd(ctx, t, e.cl, topics.FundingEvents) {
			ev, err := kafka.DecodeRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev.ID)
		}
		return out
	}
	hash := strings.ToLower(tx.Hash().Hex())
	if got := ids(""); len(got) != 1 || got[0] != "deposit-1337-"+hash+"-0" {
		t.Fatalf("ids on a real chain: %v", got)
	}
	if got := ids("s42"); len(got) != 2 || got[1] != "deposit-1337-s42-"+hash+"-0" {
		t.Fatalf("ids of incarnation s42: %v", got)
	}
}
