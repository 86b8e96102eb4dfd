package settler_test

import (
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

// killInBatch SIGKILLs the settler process while one of its batches is
// held at p: the locks of p are held, produce writes records whose batch
// must take them, and the process dies while that batch waits. The locks
// are released after the kill; Postgres then rolls the dead client's
// transaction back. It returns once the dead client's connections are
// gone.
func killInBatch(t *testing.T, settler *exec.Cmd, pool *pgxpool.Pool, p batchPoint, produce func()) {
	t.Helper()
	release := hold(t, pool, p)
	defer release()
	produce()
	waitHeld(t, pool, p)
	proctest.Kill(t, settler)
	release()
	waitGone(t, pool)
}

// split cuts s into n parts of nearly equal length, in order.
func split[T any](s []T, n int) [][]T {
	parts := make([][]T, n)
	for i := range n {
		parts[i] = s[i*len(s)/n : (i+1)*len(s)/n]
	}
	return parts
}

// TestSettlerProcessKilledMidStream runs the settler as its own process
// and kills it three times with SIGKILL in the middle of a stream of
// thousands of ledger commands (no shutdown of any kind: no offset
// commit, no pool close), each time while a batch is held inside its
// Postgres transaction: at its start, its records read and nothing
// written; halfway, waiting for a balance row; at its end, every record
// written, waiting to store its offsets. Before each kill the settler has
// applied everything produced so far, a seventh of the stream at a time;
// the next seventh arrives while the batch is held, and another while the
// settler is down. At the end every command was applied exactly once and
// the ledger-audit command passes on the result.
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
	parts := split(stream, 7)
	produce(t, producer, parts[0])
	produced := users + len(parts[0])

	// Every round of the stream moves funds of user 0.
	for i, at := range []batchPoint{ledgerStart, balancesOf(accs[0].current, accs[0].preconf), offsetsOf(settlerGroup)} {
		poll.Until(t, "every command produced applied", func() bool { return journal() == produced })
		held, whileDown := parts[1+2*i], parts[2+2*i]
		killInBatch(t, settler, pool, at, func() { produce(t, producer, held) })
		produced += len(held)
		if n := journal(); n >= produced {
			t.Fatalf("kill %d: all %d commands produced were applied, though a batch was held %s", i+1, n, at.where)
		}
		produce(t, producer, whileDown)
		produced += len(whileDown)
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

// committedTrades counts the trades of the transactions of txns that
// commit: their fills.
func committedTrades(txns []matcherTxn) int {
	n := 0
	for _, txn := range txns {
		if txn.abort {
			continue
		}
		for _, r := range txn.recs {
			if r.Topic == topics.Fills {
				n++
			}
		}
	}
	return n
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
// some of them aborted, and kills it three times with SIGKILL, each time
// while a trading batch is held inside its Postgres transaction: at its
// start, its records read and nothing written; halfway, waiting for a
// balance row; at its end, its fills written, waiting to store its
// offsets. Before each kill the settler has settled every fill produced
// so far, a seventh of the transactions at a time; the next seventh
// arrives while the batch is held, and another while the settler is down.
// At the end the database holds exactly what applying the committed
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

	total := committedTrades(out.txns)
	trades := func() int { return count(t, pool, `SELECT count(*) FROM trades`) }
	accounts := make([]int64, len(users))
	for i, u := range users {
		accounts[i] = u.Account
	}
	settler := settlerProcess(t, settlerBin, b.Addrs(), dbURL, 50)
	parts := split(out.txns, 7)
	produceTxns(t, matcher, layout, parts[0])
	produced := committedTrades(parts[0])

	// Every transaction settles fills of every account.
	for i, at := range []batchPoint{tradingStart, balancesOf(accounts...), offsetsOf(tradingGroup)} {
		poll.Until(t, "every fill produced settled", func() bool { return trades() == produced })
		held, whileDown := parts[1+2*i], parts[2+2*i]
		killInBatch(t, settler, pool, at, func() { produceTxns(t, matcher, layout, held) })
		produced += committedTrades(held)
		if n := trades(); n >= produced {
			t.Fatalf("kill %d: all %d fills produced were settled, though a batch was held %s", i+1, n, at.where)
		}
		produceTxns(t, matcher, layout, whileDown)
		produced += committedTrades(whileDown)
		settler = settlerProcess(t, settlerBin, b.Addrs(), dbURL, 50)
	}
	var got string
	poll.Until(t, "the committed transactions settled", func() bool {
		if n := trades(); n > total {
			t.Fatalf("%d trades settled; the committed transactions hold %d", n, total)
		} else if n < total {
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
