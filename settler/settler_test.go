package settler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared, proctest.RemoveBuilds) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// broker is where a test's Kafka broker listens.
type broker interface{ Addrs() []string }

// addrs is a broker known by its addresses.
type addrs []string

func (a addrs) Addrs() []string { return a }

// startBroker returns the test binary's shared Kafka broker, emptied for
// the test and holding the catalog's topics, and a client of it that
// publishes without linger.
func startBroker(t *testing.T) (broker, *kgo.Client) {
	t.Helper()
	cl, brokers := kafkatest.Start(t)
	return addrs(brokers), cl
}

// startOwnBroker starts a Kafka broker of the test's own, which it may
// kill, holding the catalog's topics, and a client like startBroker's.
func startOwnBroker(t *testing.T) (*kafkatest.Broker, *kgo.Client) {
	t.Helper()
	b := kafkatest.StartBroker(t)
	return b, b.Client(t)
}

func record(t *testing.T, topic string, key []byte, typ, id string, payload any) *kgo.Record {
	t.Helper()
	e, err := topics.FundingEnvelope(typ, id, time.Now(), payload)
	if err != nil {
		t.Fatal(err)
	}
	r, err := kafka.NewRecord(topic, key, e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func produce(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func address(i int) string { return fmt.Sprintf("0x%040x", 0xabc000+i) }

func depositRecord(t *testing.T, i, user int, qty string) *kgo.Record {
	addr := address(user)
	return record(t, topics.FundingEvents, []byte(addr), topics.TypeDepositObserved, fmt.Sprintf("deposit-1337-0x%064x-0", i),
		topics.DepositObserved{ChainID: 1337, BlockNumber: uint64(i), BlockHash: "0xb", TransactionHash: fmt.Sprintf("0x%064x", i),
			Sender: addr, Depositor: addr, TokenID: 1, Quantity: qty, AmountWei: "1"})
}

// userAccounts are the current and preconf trading accounts of a user.
type userAccounts struct{ user, current, preconf int64 }

func accounts(t *testing.T, pool *pgxpool.Pool, n int) []userAccounts {
	t.Helper()
	out := make([]userAccounts, n)
	for i := range n {
		err := pool.QueryRow(t.Context(), `
			SELECT u.user_id, c.account_id, p.account_id FROM users u
			JOIN accounts c ON c.user_id = u.user_id AND c.type = 1
			JOIN accounts p ON p.user_id = u.user_id AND p.type = 2 WHERE u.address = $1`, address(i)).
			Scan(&out[i].user, &out[i].current, &out[i].preconf)
		if err != nil {
			t.Fatalf("accounts of user %d: %v", i, err)
		}
	}
	return out
}

// startSettler runs a settler on pool until stop is called or the test
// ends. stop closes the settler, waits for Run to return and fails the
// test if Run ended with an error: a settler closed, or whose context
// ended, returns none.
func startSettler(t *testing.T, ctx context.Context, brokers []string, pool *pgxpool.Pool, batch int) (s *settler.Settler, stop func()) {
	t.Helper()
	s, err := settler.New(ctx, settler.Config{Brokers: brokers, MaxBatch: batch}, pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Close()
			if err := <-done; err != nil {
				t.Errorf("settler run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustAudit(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	v, err := audit.Run(context.Background(), pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Fatalf("audit: %v", v)
	}
}

// TestSettlerCrashesAndRestarts crashes a settler in the middle of a
// stream of thousands of commands (its Kafka client closed without
// committing, its Postgres pool dropped) while one of its batches waits
// for a balance row halfway through its transaction, restarts two
// instances in one group so that partitions rebalance between them, and
// checks that every command was applied exactly once and the ledger
// audits clean.
func TestSettlerCrashesAndRestarts(t *testing.T) {
	const users, transfersPerUser = 50, 60
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	journal := func() int { return count(t, pool, `SELECT count(*) FROM journal`) }

	// Fund the users directly, then reserve what their transfers move, as
	// ingress would.
	produce(t, producer, fundingDeposits(t, users))
	_, stop := startSettler(t, ctx, b.Addrs(), pool, 0)
	poll.Until(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	stop()
	accs := accounts(t, pool, users)
	stream := transferStream(t, pool, accs, transfersPerUser)
	want, half := users+len(stream), len(stream)/2
	// A few duplicates, as the outbox relay produces after a lost ack.
	// Each copy is its own record: the client owns a record until its
	// produce finishes, so one value must not be produced twice at once.
	for _, r := range stream[:100] {
		dup := *r
		stream = append(stream, &dup)
	}

	// The settler to crash, with a pool of its own, applies the first half;
	// then a batch of the second waits for the balance rows of user 0,
	// whose funds every round of the stream moves, and the settler crashes.
	crashPool := settlerPool(t, pool)
	crashCtx, crash := context.WithCancel(ctx)
	_, stop = startSettler(t, crashCtx, b.Addrs(), crashPool, 500)
	produce(t, producer, stream[:half])
	poll.Until(t, "the first half applied", func() bool { return journal() == users+half })
	at := balancesOf(accs[0].current, accs[0].preconf)
	release := hold(t, pool, at)
	produce(t, producer, stream[half:])
	waitHeld(t, pool, at)
	crash()
	stop()
	crashPool.Close()
	release()
	waitGone(t, pool)
	if n := journal(); n >= want {
		t.Fatalf("every command was applied (%d), though a batch was held in its transaction when the settler crashed", n)
	}

	var stops []func()
	for range 2 {
		_, stop := startSettler(t, ctx, b.Addrs(), pool, 700)
		stops = append(stops, stop)
	}
	poll.Until(t, "every command applied", func() bool { return journal() == want })
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Go(stop)
	}
	wg.Wait()
	// 100 + 60 × 0.5 deposited, 60 moved to the preconf account.
	checkTransferStream(t, pool, accs, want, "70/0", fmt.Sprintf("%d/0", transfersPerUser))
	mustAudit(t, pool)
}

func poolURL(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	return pool.Config().ConnString()
}

// TestUndecodableRecordsDoNotBlock records a broken record as rejected and
// goes on with the next one.
func TestUndecodableRecordsDoNotBlock(t *testing.T) {
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	bad := &kgo.Record{Topic: topics.FundingEvents, Key: []byte("x"), Value: []byte("not json")}
	produce(t, producer, []*kgo.Record{bad, depositRecord(t, 1, 1, "1")})
	s, stop := startSettler(t, t.Context(), b.Addrs(), pool, 0)
	poll.Until(t, "both records", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) == 2 })
	stop()
	if n := count(t, pool, `SELECT count(*) FROM journal WHERE status = 'rejected'`); n != 1 {
		t.Fatalf("%d rejected", n)
	}
	if s.Stats().Applied != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

// fundingDeposits are deposits of 100 ETH to users 0 to n-1.
func fundingDeposits(t *testing.T, n int) []*kgo.Record {
	t.Helper()
	out := make([]*kgo.Record, n)
	for u := range n {
		out[u] = depositRecord(t, u, u, "100")
	}
	return out
}

// transferStream reserves perUser ETH in each current account, as ingress
// would, and returns perUser rounds of, for every user, a transfer of 1
// ETH to its preconf account and a deposit of 0.5 ETH.
func transferStream(t *testing.T, pool *pgxpool.Pool, accs []userAccounts, perUser int) []*kgo.Record {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `UPDATE account_balances SET locked = $1
		WHERE account_id IN (SELECT account_id FROM accounts WHERE type = 1 AND user_id IS NOT NULL)`, perUser); err != nil {
		t.Fatal(err)
	}
	var stream []*kgo.Record
	id := 0
	for i := range perUser {
		for u, a := range accs {
			id++
			stream = append(stream, record(t, topics.LedgerCommands, topics.UserKey(a.user), topics.TypeLedgerTransfer, fmt.Sprintf("transfer-%d", id),
				topics.LedgerTransfer{TransferID: int64(id), UserID: a.user, FromAccountID: a.current, ToAccountID: a.preconf, TokenID: 1, Quantity: "1"}))
			stream = append(stream, depositRecord(t, len(accs)+i*len(accs)+u, u, "0.5"))
		}
	}
	return stream
}

// checkTransferStream checks that the want commands were each applied
// once (two postings each, none refused) and that every user's current
// and preconf accounts hold cur and pre ("quantity/locked").
func checkTransferStream(t *testing.T, pool *pgxpool.Pool, accs []userAccounts, want int, cur, pre string) {
	t.Helper()
	if n := count(t, pool, `SELECT count(*) FROM postings`); n != 2*want {
		t.Fatalf("%d postings, want %d", n, 2*want)
	}
	if n := count(t, pool, `SELECT count(*) FROM journal WHERE status <> 'applied'`); n != 0 {
		t.Fatalf("%d commands rejected", n)
	}
	for _, a := range accs {
		var c, p string
		if err := pool.QueryRow(t.Context(), `SELECT
			(SELECT quantity || '/' || locked FROM account_balances WHERE account_id = $1),
			(SELECT quantity || '/' || locked FROM account_balances WHERE account_id = $2)`, a.current, a.preconf).Scan(&c, &p); err != nil {
			t.Fatal(err)
		}
		if c != cur || p != pre {
			t.Fatalf("user %d: current %s preconf %s, want %s and %s", a.user, c, p, cur, pre)
		}
	}
}

// TestSettlerRidesOutABrokerCrash kills the Kafka broker (SIGKILL) while
// one of the settler's batches of ledger commands waits for a balance row
// halfway through its Postgres transaction, lets that batch commit while
// the broker is down, and starts the broker again on the same address and
// data: the settler carries on by itself, every command is applied exactly
// once, and once it has caught up, the account feed of every batch, the
// one committed while the broker was down included, has reached Kafka
// (account_feed is empty).
func TestSettlerRidesOutABrokerCrash(t *testing.T) {
	t.Parallel() // a broker of its own, killed: beside the tests on the shared one
	const users, transfersPerUser = 30, 60
	b, producer := startOwnBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	journal := func() int { return count(t, pool, `SELECT count(*) FROM journal`) }

	produce(t, producer, fundingDeposits(t, users))
	_, stop := startSettler(t, ctx, b.Addrs(), settlerPool(t, pool), 200)
	poll.Until(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	accs := accounts(t, pool, users)
	stream := transferStream(t, pool, accs, transfersPerUser)
	want, quarter, half := users+len(stream), len(stream)/4, len(stream)/2
	produce(t, producer, stream[:quarter])
	poll.Until(t, "the first quarter applied", func() bool { return journal() == users+quarter })
	// Every round of the stream moves funds of user 0.
	at := balancesOf(accs[0].current, accs[0].preconf)
	release := hold(t, pool, at)
	produce(t, producer, stream[quarter:half])
	waitHeld(t, pool, at)
	if err := b.Node().Kill(); err != nil {
		t.Fatal(err)
	}
	held := journal()
	release()
	poll.Until(t, "the held batch committed while the broker is down", func() bool { return journal() > held })
	if err := b.Node().Start(ctx); err != nil {
		t.Fatal(err)
	}
	produce(t, producer, stream[half:])
	poll.Until(t, "every command applied", func() bool { return journal() == want })
	poll.Until(t, "the account feed published", func() bool { return count(t, pool, `SELECT count(*) FROM account_feed`) == 0 })
	stop()
	// 100 + 60 × 0.5 deposited, 60 moved to the preconf account.
	checkTransferStream(t, pool, accs, want, "70/0", fmt.Sprintf("%d/0", transfersPerUser))
	mustAudit(t, pool)
}
