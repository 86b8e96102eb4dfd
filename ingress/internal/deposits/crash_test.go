package deposits_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/deposits"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// depositStream mines blocks full of deposits for a set of wallets and
// remembers what each wallet was sent, in wei.
type depositStream struct {
	e       *env
	wallets []common.Address
	sent    map[common.Address]*big.Int
	count   int
	nonce   uint64
}

func newDepositStream(t *testing.T, e *env, wallets int) *depositStream {
	t.Helper()
	nonce, err := e.sim.Client().PendingNonceAt(t.Context(), e.auth.From)
	if err != nil {
		t.Fatal(err)
	}
	s := &depositStream{e: e, sent: map[common.Address]*big.Int{}, nonce: nonce}
	for i := range wallets {
		w := common.BigToAddress(big.NewInt(int64(0xd0000 + i)))
		s.wallets = append(s.wallets, w)
		s.sent[w] = new(big.Int)
	}
	return s
}

// block sends n deposits, each to the next wallet with an amount of its
// own, and mines them in one block. Gas and nonce are set so that sending
// costs no estimate round trips.
func (s *depositStream) block(t *testing.T, n int) {
	t.Helper()
	for range n {
		w := s.wallets[s.count%len(s.wallets)]
		amount := big.NewInt(1e12 + int64(s.count))
		opts := *s.e.auth
		opts.Value, opts.Nonce = amount, new(big.Int).SetUint64(s.nonce)
		opts.GasLimit, opts.GasPrice = 200_000, big.NewInt(10_000_000_000)
		if _, err := s.e.contract.DepositFor(&opts, w); err != nil {
			t.Errorf("deposit %d: %v", s.count, err)
			return
		}
		s.nonce++
		s.count++
		s.sent[w].Add(s.sent[w], amount)
	}
	s.e.sim.Commit()
}

// incarnation is one life of the watcher process: its own Postgres pool
// and Kafka client, as a real process has, and a context that a kill
// cancels.
type incarnation struct {
	cancel   context.CancelFunc
	ended    chan struct{} // closed when Run returned, with err set
	err      error
	pool     *pgxpool.Pool
	cl       *kgo.Client
	produced atomic.Int64
}

// startWatcher starts an incarnation. killAfter > 0 kills it the moment
// its killAfter-th record is acknowledged by the broker: mid-publish, or
// after the whole range is published but before its cursor is stored.
func startWatcher(t *testing.T, e *env, url string, killAfter int64) *incarnation {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	in := &incarnation{cancel: cancel, ended: make(chan struct{})}
	pool, err := postgres.Open(ctx, url, postgres.Options{ApplicationName: "chain-watcher"})
	if err != nil {
		t.Fatal(err)
	}
	in.pool = pool
	hook := ackHook(func() {
		if in.produced.Add(1) == killAfter {
			cancel()
		}
	})
	in.cl, err = kafka.NewClient(kafka.Config{Brokers: e.brokers, ClientID: "chain-watcher"}, kgo.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	w, err := deposits.New(deposits.Config{ChainID: 1337, Contract: e.address, Confirmations: 2, MaxRange: 2, Poll: 5 * time.Millisecond},
		e.sim.Client(), pool, in.cl, quiet)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(in.ended)
		in.err = w.Run(ctx)
	}()
	return in
}

// kill stops the incarnation wherever it is and drops its connections
// without flushing or committing anything.
func (in *incarnation) kill(t *testing.T) {
	t.Helper()
	in.cancel()
	<-in.ended
	if in.err != nil {
		t.Fatalf("watcher ended with %v", in.err)
	}
	in.cl.Close()
	in.pool.Close()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type ackHook func()

// OnProduceRecordUnbuffered counts the records the broker acknowledged.
func (h ackHook) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err == nil {
		h()
	}
}

func cursorBlock(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var block int64
	err := pool.QueryRow(t.Context(), `SELECT coalesce(max(last_block), -1) FROM chain_cursors`).Scan(&block)
	if err != nil {
		t.Fatal(err)
	}
	return block
}

// TestWatcherCrashesAndRestarts kills the chain watcher again and again
// while the chain grows by thousands of deposits: when the broker has
// acknowledged a random number of its records (mid-publish, or after a
// whole range but before its cursor is stored), and at random instants
// (reading headers or logs, storing the cursor). Each new incarnation
// resumes from the persisted cursor and republishes what was not recorded
// as done. A real settler applies the stream all along. In the end every
// deposit on chain is credited exactly once, the duplicates on the topic
// change nothing, and the ledger audit passes.
func TestWatcherCrashesAndRestarts(t *testing.T) {
	const wallets, blocks, perBlock = 40, 50, 50
	e := setup(t)
	pool := pgtest.New(t, schema.Migrations())
	url := pool.Config().ConnString()
	ctx := t.Context()
	st, err := settler.New(ctx, settler.Config{Brokers: e.brokers, MaxBatch: 300}, pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	settled := make(chan error, 1)
	go func() { settled <- st.Run(ctx) }()
	defer func() {
		st.Close()
		<-settled
	}()

	stream := newDepositStream(t, e, wallets)
	var mining sync.WaitGroup
	mining.Go(func() {
		for range blocks {
			stream.block(t, perBlock)
		}
		// The last deposits need their confirmations.
		for range 3 {
			e.sim.Commit()
		}
	})

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	seed := rng.Uint64()
	t.Logf("kill points from seed %d", seed)
	rng = rand.New(rand.NewPCG(seed, 7))
	kills := 0
	for round := range 24 {
		if round%2 == 0 {
			// Killed by its own acknowledgements: one to two ranges in.
			in := startWatcher(t, e, url, 1+rng.Int64N(2*2*perBlock))
			select {
			case <-in.ended:
			case <-time.After(3 * time.Second): // caught up before the kill point
			}
			in.kill(t)
		} else {
			in := startWatcher(t, e, url, 0)
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			in.kill(t)
		}
		kills++
	}
	mining.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The last incarnation runs until the stream is on the topic.
	head, err := e.sim.Client().BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := startWatcher(t, e, url, 0)
	poll.Until(t, "cursor at the confirmed head", func() bool { return cursorBlock(t, pool) >= int64(head)-2 })
	last.kill(t)

	records := len(kafkatest.ReadToEnd(ctx, t, e.cl, topics.FundingEvents))
	poll.Until(t, "every published record applied", func() bool {
		s := st.Stats()
		return s.Applied+s.Duplicates+s.Rejected >= int64(records)
	})
	t.Logf("%d deposits on chain, %d records published over %d kills, settler %+v", stream.count, records, kills, st.Stats())
	checkCreditedOnce(t, e, pool, stream)
	if records <= stream.count {
		t.Fatalf("%d records for %d deposits: no kill made the watcher republish, the test proves nothing", records, stream.count)
	}
	v, err := settler.Audit(ctx, pool, 10)
	if err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}

// checkCreditedOnce compares the ledger with the chain: one deposit row
// per Deposit log, no rejected command, and each wallet's current account
// holds exactly what was sent to it.
func checkCreditedOnce(t *testing.T, e *env, pool *pgxpool.Pool, stream *depositStream) {
	t.Helper()
	logs, err := e.contract.FilterDeposit(&bind.FilterOpts{Context: t.Context()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	onChain := map[string]bool{}
	for logs.Next() {
		onChain[fmt.Sprintf("%s/%d", strings.ToLower(logs.Event.Raw.TxHash.Hex()), logs.Event.Raw.Index)] = true
	}
	if len(onChain) != stream.count {
		t.Fatalf("%d Deposit logs on chain, %d deposits sent", len(onChain), stream.count)
	}
	rows, err := pool.Query(t.Context(), `SELECT lower(transaction_hash) || '/' || log_idx FROM deposits`)
	if err != nil {
		t.Fatal(err)
	}
	credited := map[string]int{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		credited[k]++
	}
	for k := range onChain {
		if credited[k] != 1 {
			t.Errorf("deposit %s credited %d times", k, credited[k])
		}
	}
	if len(credited) != len(onChain) {
		t.Errorf("%d deposits credited, %d on chain", len(credited), len(onChain))
	}
	if n := count(t, pool, `SELECT count(*) FROM journal WHERE status <> 'applied'`); n != 0 {
		t.Errorf("%d commands rejected", n)
	}
	for w, wei := range stream.sent {
		var q decimal.Decimal
		err := pool.QueryRow(t.Context(), `
			SELECT b.quantity FROM users u JOIN accounts a ON a.user_id = u.user_id AND a.type = 1
			JOIN account_balances b ON b.account_id = a.account_id AND b.token_id = 1
			WHERE u.address = $1`, strings.ToLower(w.Hex())).Scan(&q)
		if err != nil {
			t.Fatalf("balance of %s: %v", w.Hex(), err)
		}
		if want := decimal.NewFromBigInt(wei, -18); !q.Equal(want) {
			t.Errorf("%s holds %s, was sent %s", w.Hex(), q, want)
		}
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
