package inclusions_test

import (
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

var chainID = big.NewInt(1337)

// env is a simulated chain with a funded payer, originator and searcher,
// and a database with the exchange's schema.
type env struct {
	sim                         *simulated.Backend
	pool                        *pgxpool.Pool
	payer, originator, searcher *ecdsa.PrivateKey
	recipient                   common.Address
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{recipient: common.HexToAddress("0x00000000000000000000000000000000000000f1")}
	alloc := types.GenesisAlloc{}
	eth, _ := new(big.Int).SetString("1000000000000000000000", 10)
	for _, k := range []**ecdsa.PrivateKey{&e.payer, &e.originator, &e.searcher} {
		*k, _ = crypto.GenerateKey()
		alloc[crypto.PubkeyToAddress((*k).PublicKey)] = types.Account{Balance: eth}
	}
	e.sim = simulated.NewBackend(alloc)
	t.Cleanup(func() { _ = e.sim.Close() })
	e.pool = pgtest.New(t, schema.Migrations())
	return e
}

func (e *env) watcher(chain inclusions.Chain, confirmations uint64) *inclusions.Watcher {
	return e.watcherTo(chain, confirmations, nil)
}

// watcherTo is a watcher that keeps its events in the outbox and
// publishes them with cl; with cl nil it keeps and publishes nothing.
func (e *env) watcherTo(chain inclusions.Chain, confirmations uint64, cl *kgo.Client) *inclusions.Watcher {
	var out *outbox.Outbox
	if cl != nil {
		out = outbox.New(e.pool, cl, quiet)
	}
	return inclusions.New(inclusions.Config{ChainID: chainID, PayerKey: e.payer, RefundConfirmations: confirmations, Resend: time.Millisecond},
		chain, e.pool, out, quiet)
}

// quiet is the logger of the watchers under test.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func (e *env) client() simulated.Client { return e.sim.Client() }

// transfer signs a dynamic-fee transfer from key.
func (e *env) transfer(t *testing.T, key *ecdsa.PrivateKey, nonce uint64, to common.Address, tip, feeCap int64) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(tip), GasFeeCap: big.NewInt(feeCap), Gas: 21000, To: &to, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func (e *env) nonce(t *testing.T, key *ecdsa.PrivateKey) uint64 {
	t.Helper()
	n, err := e.client().PendingNonceAt(t.Context(), crypto.PubkeyToAddress(key.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// backrun stores an originator transaction (refund 50% to e.recipient)
// and a searcher bundle backrunning it, as the forwarder does, and sends
// both transactions to the chain's pool. It returns the originator
// transaction's hash and the searcher's transaction.
func (e *env) backrun(t *testing.T) (string, *types.Transaction) {
	t.Helper()
	ctx := t.Context()
	origin := e.transfer(t, e.originator, e.nonce(t, e.originator), common.HexToAddress("0xe1"), 1e9, 100e9)
	search := e.transfer(t, e.searcher, e.nonce(t, e.searcher), common.HexToAddress("0xe2"), 50e9, 100e9)
	oh, sh := hash(origin), hash(search)
	if _, err := e.pool.Exec(ctx, `INSERT INTO orderflow_txs (hash, originator, sender, raw, decoded, method, refund_recipient, refund_percent, received_at)
		VALUES ($1, '', '0x', '0x', '{}', 'eth_sendRawTransaction', $2, 50, now())`, oh, strings.ToLower(e.recipient.Hex())); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO orderflow_bundles (bundle_hash, kind, backrun_of, tx_hashes, status, builders, received_at)
		VALUES ($1, 'searcher', $2, $3, 'FORWARDED', '{http://builder}', now())`, "0xb"+sh[3:], oh, []string{oh, sh}); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*types.Transaction{origin, search} {
		if err := e.client().SendTransaction(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	return oh, search
}

func hash(tx *types.Transaction) string { return strings.ToLower(tx.Hash().Hex()) }

// owed is what a refund of 50% of tx's payment comes to: its priority fee
// on the gas it used.
func (e *env) owed(t *testing.T, tx *types.Transaction) *big.Int {
	t.Helper()
	rc, err := e.client().TransactionReceipt(t.Context(), tx.Hash())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.client().HeaderByNumber(t.Context(), rc.BlockNumber)
	if err != nil {
		t.Fatal(err)
	}
	tip := new(big.Int).Sub(rc.EffectiveGasPrice, h.BaseFee)
	pay := tip.Mul(tip, new(big.Int).SetUint64(rc.GasUsed))
	return pay.Div(pay.Mul(pay, big.NewInt(50)), big.NewInt(100))
}

type refundRow struct {
	ID, Status, Amount, BlockHash, Payout string
	Block                                 int64
	PayoutBlock                           *int64
}

// TxHash is the originator transaction of the refund, the key of its
// events: the part of the id after the bundle hash.
func (r refundRow) TxHash() string {
	_, tx, _ := strings.Cut(r.ID, ":")
	return tx
}

func (e *env) refunds(t *testing.T) []refundRow {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT refund_id, status, amount_wei::text, block_hash, payout_tx_hash, block_number, payout_block
		FROM orderflow_refunds ORDER BY refund_id`)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[refundRow])
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func (e *env) balance(t *testing.T, a common.Address) *big.Int {
	t.Helper()
	b, err := e.client().BalanceAt(t.Context(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// payouts is how many transactions the payer has had mined.
func (e *env) payouts(t *testing.T) uint64 {
	t.Helper()
	n, err := e.client().NonceAt(t.Context(), crypto.PubkeyToAddress(e.payer.PublicKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) canonical(t *testing.T, n int64) string {
	t.Helper()
	h, err := e.client().HeaderByNumber(t.Context(), big.NewInt(n))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(h.Hash().Hex())
}

func step(t *testing.T, w *inclusions.Watcher) {
	t.Helper()
	if err := w.Step(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// mine makes n blocks, stepping w after each.
func (e *env) mine(t *testing.T, w *inclusions.Watcher, n int) {
	t.Helper()
	for range n {
		e.sim.Commit()
		step(t, w)
	}
}

func (e *env) status(t *testing.T, table, key, hash string) (status string, block *int64) {
	t.Helper()
	if err := e.pool.QueryRow(context.Background(), `SELECT status, block_number FROM `+table+` WHERE `+key+` = $1`, hash).
		Scan(&status, &block); err != nil {
		t.Fatal(err)
	}
	return status, block
}
