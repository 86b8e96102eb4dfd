package settler_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler/internal/settlement/settlementtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// settlerProcess starts the settler binary against the broker and
// database, as the static group member kill-test: a restart takes the
// killed instance's partitions back at once.
func settlerProcess(t *testing.T, bin string, brokers []string, dbURL string, maxBatch int) *exec.Cmd {
	t.Helper()
	return proctest.Start(t, bin, "KAFKA_BROKERS="+brokers[0], "DATABASE_URL="+dbURL, "ADMIN_ADDR=127.0.0.1:0",
		"ENVIRONMENT=dev", fmt.Sprintf("SETTLER_MAX_BATCH=%d", maxBatch), "SETTLER_INSTANCE_ID=kill-test", "LOG_LEVEL=warn")
}

// lockRows runs query, a SELECT ... FOR UPDATE, in a transaction of the
// test's own and holds its row locks until release is called: a settler
// batch that writes one of those rows waits inside its Postgres
// transaction until then.
func lockRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) (release func()) {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), query, args...); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(context.Background()) }
}

// Where killMidBatch catches a batch: halfway through, waiting for the
// balance rows of accounts; or at its end, every record written, waiting
// to store the next offsets of group.
const (
	lockBalances = `SELECT 1 FROM account_balances WHERE account_id = ANY($1) FOR UPDATE`
	lockOffsets  = `SELECT 1 FROM consumer_offsets WHERE consumer_group = $1 FOR UPDATE`
)

// killMidBatch SIGKILLs the settler while one of its batches is inside
// its Postgres transaction, having written part of it: the rows of lock
// are locked, produceMore produces records whose batch must write them,
// and the process dies while that batch waits. The lock is released after
// the kill; Postgres then rolls the dead client's transaction back. It
// returns once the dead client's connections are gone.
func killMidBatch(t *testing.T, settler *exec.Cmd, pool *pgxpool.Pool, produceMore func(), lock string, args ...any) {
	t.Helper()
	release := lockRows(t, pool, lock, args...)
	defer release()
	produceMore()
	poll.Until(t, "a settler batch that has written, waiting for a row lock", func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND application_name = 'settler' AND wait_event_type = 'Lock' AND backend_xid IS NOT NULL`) > 0
	})
	proctest.Kill(t, settler)
	release()
	poll.Until(t, "the killed settler's connections closed", func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'settler'`) == 0
	})
}

// TestSettlerProcessKilledMidStream runs the settler as its own process
// and kills it three times with SIGKILL in the middle of a stream of
// thousands of ledger commands (no shutdown of any kind: no offset
// commit, no pool close): while a batch waits for a balance row halfway
// through its Postgres transaction, while a batch that wrote all its
// records waits to store its offsets, and wherever it is. Parts of the
// stream arrive while it is down. At the end every command was applied
// exactly once and the ledger-audit command passes on the result.
func TestSettlerProcessKilledMidStream(t *testing.T) {
	const users, transfersPerUser = 40, 100
	settlerBin, auditBin := proctest.Build(t, "./cmd/settler"), proctest.Build(t, "./cmd/ledger-audit")
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	dbURL := poolURL(t, pool)
	journal := func() int { return count(t, pool, `SELECT count(*) FROM journal`) }

	produce(t, producer, fundingDeposits(t, users))
	settler := settlerProcess(t, settlerBin, b.Addrs(), dbURL, 300)
	poll.Until(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	accs := accounts(t, pool, users)
	stream := transferStream(t, pool, accs, transfersPerUser)
	want := users + len(stream)
	third := len(stream) / 3
	produce(t, producer, stream[:third])

	applied := users
	for i, kill := range []func(){
		// Every round of the stream moves funds of user 0.
		func() {
			killMidBatch(t, settler, pool, func() { produce(t, producer, stream[third:2*third]) },
				lockBalances, []int64{accs[0].current, accs[0].preconf})
		},
		func() {
			killMidBatch(t, settler, pool, func() { produce(t, producer, stream[2*third:]) }, lockOffsets, settlerGroup)
		},
		func() { proctest.Kill(t, settler) },
	} {
		poll.Until(t, "more of the stream applied", func() bool { return journal() > applied+300 })
		kill()
		if applied = journal(); applied >= want {
			t.Fatalf("kill %d came after everything was applied (%d); make the stream longer", i+1, applied)
		}
		settler = settlerProcess(t, settlerBin, b.Addrs(), dbURL, 300)
	}
	poll.Until(t, "every command applied", func() bool { return journal() == want })
	// 100 + 100 × 0.5 deposited, 100 moved to the preconf account.
	checkTransferStream(t, pool, accs, want, "50/0", fmt.Sprintf("%d/0", transfersPerUser))
	ledgerAudit(t, auditBin, dbURL)
}

// settlerGroup and tradingGroup are the consumer groups of the settler's
// default configuration, the keys of their stored offsets.
const (
	settlerGroup = "settler"
	tradingGroup = settlerGroup + "-trading"
)

// ledgerAudit runs the ledger-audit command on a quiet database and fails
// the test unless it exits 0.
func ledgerAudit(t *testing.T, bin, dbURL string) {
	t.Helper()
	audit := exec.Command(bin, "-quiescent")
	audit.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	if out, err := audit.CombinedOutput(); err != nil {
		t.Fatalf("ledger-audit after the kills: %v\n%s", err, out)
	}
}

// matcherTxn is a Kafka transaction of the matcher's output.
type matcherTxn struct {
	recs  []settlementtest.Record
	abort bool
}

// matcherOutput is what a matcher writes about a flow of trades on slots,
// in transactions of four trades each: most commit; every fifth holds
// trades of orders the matcher never confirmed and aborts; every seventh
// aborts and is written again in the next transaction, as a matcher
// restarted after a crash writes its last batch again.
type matcherOutput struct {
	txns      []matcherTxn
	orders    []*settlementtest.Order // every order ingress wrote
	committed []settlementtest.Record // the records of committed transactions, in log order
	trades    int                     // trades in committed transactions
	// ghostTrades and ghostOrders are the trades of transactions that
	// only ever aborted, and their orders.
	ghostTrades, ghostOrders []int64
}

func newMatcherOutput(users []settlementtest.Account, rounds int, slots ...uint64) *matcherOutput {
	s := settlementtest.NewStream(time.Now().Truncate(time.Millisecond))
	for i, slot := range slots {
		s.Open(slot, users[i], int64(4*rounds)*1000, settlementtest.DefaultFees)
	}
	out := &matcherOutput{}
	out.add(s.Records, false)
	for i := range rounds {
		ghost := i%5 == 3
		s.Records = nil
		var trades []int64
		for k := range 4 {
			slot := slots[k%len(slots)]
			seller, buyer := users[k%len(slots)], users[len(slots)+(i+k)%(len(users)-len(slots))]
			price := "0.00000000" + strconv.Itoa(2+(i+k)%7)
			ask := s.Place(seller, topics.InclusionPreconf, slot, false, topics.OrderTypeLimit, price, "1000")
			bid := s.Place(buyer, topics.InclusionPreconf, slot, true, topics.OrderTypeLimit, price, "1000")
			s.Accept(ask, true)
			s.Accept(bid, false)
			trades = append(trades, s.Trade(bid, ask, price, 1000, 0).TradeID)
			out.orders = append(out.orders, ask, bid)
			if ghost {
				out.ghostOrders = append(out.ghostOrders, ask.ID, bid.ID)
			}
		}
		recs := slices.Clone(s.Records)
		switch {
		case ghost:
			out.ghostTrades = append(out.ghostTrades, trades...)
			out.add(recs, true)
		case i%7 == 5:
			out.add(recs, true)
			fallthrough
		default:
			out.trades += len(trades)
			out.add(recs, false)
		}
	}
	return out
}

func (m *matcherOutput) add(recs []settlementtest.Record, abort bool) {
	m.txns = append(m.txns, matcherTxn{recs: recs, abort: abort})
	if !abort {
		m.committed = append(m.committed, recs...)
	}
}

// produceTxns writes txns with a transactional client, each in a
// transaction of its own that commits or aborts once all its records
// are in the log.
func produceTxns(t *testing.T, cl *kgo.Client, layout topics.SlotLayout, txns []matcherTxn) {
	t.Helper()
	ctx := t.Context()
	for _, txn := range txns {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		recs := make([]*kgo.Record, len(txn.recs))
		for i, r := range txn.recs {
			rec, err := kafka.NewSlotRecord(r.Topic, layout, slotOf(t, r.Envelope), r.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = rec
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(!txn.abort)); err != nil {
			t.Fatalf("end transaction (abort %v): %v", txn.abort, err)
		}
	}
}

// TestSettlerProcessKilledWhileSettlingTransactionalFills runs the
// settler binary on the matcher's output written in Kafka transactions,
// some of them aborted, and kills it three times with SIGKILL: while a
// trading batch waits for a balance row inside its Postgres transaction,
// while a batch that wrote its fills waits to store its offsets, and
// wherever it is; parts of the output arrive while it is down. At
// the end the database holds exactly what applying the committed
// transactions once gives, nothing of the trades and orders of the
// aborted transactions, and ledger-audit passes.
func TestSettlerProcessKilledWhileSettlingTransactionalFills(t *testing.T) {
	settlerBin, auditBin := proctest.Build(t, "./cmd/settler"), proctest.Build(t, "./cmd/ledger-audit")
	b, _ := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	dbURL := poolURL(t, pool)
	users := settlementtest.Fund(t, pool, 6, "50")
	out := newMatcherOutput(users, 90, 13_000_000, 13_000_001)
	settlementtest.InsertOrders(t, pool, out.orders...)
	layout, err := topics.DefaultLayout(topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	matcher, err := kafka.NewClient(kafka.Config{Brokers: b.Addrs(), ClientID: "matcher"},
		kgo.TransactionalID("kill-test-matcher"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(matcher.Close)

	// What applying the committed transactions once gives.
	ref := pgtest.New(t, schema.Migrations())
	settlementtest.Fund(t, ref, len(users), "50")
	settlementtest.InsertOrders(t, ref, out.orders...)
	applyDirect(t, ref, out.committed, 97)
	want := settlementtest.Snapshot(t, ref)

	third := len(out.txns) / 3
	trades := func() int { return count(t, pool, `SELECT count(*) FROM trades`) }
	accounts := make([]int64, len(users))
	for i, u := range users {
		accounts[i] = u.Account
	}
	settler := settlerProcess(t, settlerBin, b.Addrs(), dbURL, 50)
	produceTxns(t, matcher, layout, out.txns[:third])
	settled := 0
	for i, kill := range []func(){
		// Every transaction settles fills of every account.
		func() {
			killMidBatch(t, settler, pool, func() { produceTxns(t, matcher, layout, out.txns[third:2*third]) }, lockBalances, accounts)
		},
		func() {
			killMidBatch(t, settler, pool, func() { produceTxns(t, matcher, layout, out.txns[2*third:]) }, lockOffsets, tradingGroup)
		},
		func() { proctest.Kill(t, settler) },
	} {
		poll.Until(t, "more fills settled", func() bool { return trades() > settled+10 })
		kill()
		if settled = trades(); settled >= out.trades {
			t.Fatalf("kill %d came after every fill was settled (%d); make the flow longer", i+1, settled)
		}
		settler = settlerProcess(t, settlerBin, b.Addrs(), dbURL, 50)
	}
	var got string
	poll.Until(t, "the committed transactions settled", func() bool {
		if n := trades(); n > out.trades {
			t.Fatalf("%d trades settled; the committed transactions hold %d", n, out.trades)
		} else if n < out.trades {
			return false
		}
		got = settlementtest.Snapshot(t, pool)
		return got == want
	})
	if n := count(t, pool, fmt.Sprintf(`SELECT count(*) FROM journal WHERE command_id IN (%s)`, fillIDs(out.ghostTrades))); n != 0 {
		t.Fatalf("%d fills of aborted transactions journaled", n)
	}
	var changed int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE order_id = ANY($1)
		AND (status <> 0 OR fulfilled <> 0 OR released OR spent <> 0)`, out.ghostOrders).Scan(&changed); err != nil {
		t.Fatal(err)
	}
	if changed != 0 {
		t.Fatalf("%d orders of aborted transactions changed", changed)
	}
	ledgerAudit(t, auditBin, dbURL)
}

// fillIDs are the journal ids of trades, as SQL literals.
func fillIDs(trades []int64) string {
	ids := make([]string, len(trades))
	for i, id := range trades {
		ids[i] = "'fill:" + strconv.FormatInt(id, 10) + "'"
	}
	return strings.Join(ids, ", ")
}
