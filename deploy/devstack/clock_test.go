package devstack

import (
	"blockspace.exchange/deploy/devchain"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

// TestTwoClocksChangeNoOutcome runs the same scenario once with one slot
// clock and once with two clocks publishing at the same instants, each
// against its own matcher on an emptied broker, and compares every record the
// matcher wrote: market statuses, order events (a trade and an expiry)
// and fills must be byte for byte the same.
func TestTwoClocksChangeNoOutcome(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, schema.Migrations())
	// The broker first: the genesis below must lie ahead of both runs,
	// and a turn on the shared broker may take a while to come.
	brokers := kafkatest.Shared(t)
	env, err := environment.Lookup("dev")
	if err != nil {
		t.Fatal(err)
	}
	// Genesis lies ahead, so both runs see every event from the first
	// market open on, whenever they start.
	env = env.WithDevClock(time.Now().Add(200*time.Second).Truncate(time.Second), time.Second)
	if _, err := devkit.RegisterValidator(t.Context(), pool, env.ChainID, devchain.DemoUserAddress, []byte(devchain.DemoValidatorSeed)); err != nil {
		t.Fatal(err)
	}
	var seller, sellerAccount int64
	if err := pool.QueryRow(t.Context(), `SELECT u.user_id, a.account_id FROM users u JOIN accounts a ON a.user_id = u.user_id AND a.type = 2
		WHERE u.address = $1`, devchain.DemoUserAddress).Scan(&seller, &sellerAccount); err != nil {
		t.Fatal(err)
	}
	one := runClocks(t, brokers, pool, env, 1, seller, sellerAccount)
	kafkatest.Empty(t)
	two := runClocks(t, brokers, pool, env, 2, seller, sellerAccount)
	if len(one) < 10 {
		t.Fatalf("only %d matcher outputs", len(one))
	}
	all := bytes.Join(one, nil)
	for _, typ := range []string{topics.TypeTradeExecuted, topics.TypeOrderExpired, topics.TypeMarketStatus} {
		if !bytes.Contains(all, []byte(`"type":"`+typ+`"`)) {
			t.Errorf("no %s among the outputs", typ)
		}
	}
	if len(one) != len(two) {
		t.Fatalf("one clock: %d outputs, two clocks: %d", len(one), len(two))
	}
	for i := range one {
		if !bytes.Equal(one[i], two[i]) {
			t.Fatalf("output %d differs:\none clock:  %s\ntwo clocks: %s", i, one[i], two[i])
		}
	}
}

// runClocks drives n clocks through slots 0 to 4 until they finalize, on
// the emptied broker at brokers, and returns the matcher's outputs, ordered by topic, partition and offset.
func runClocks(t *testing.T, brokers []string, pool *pgxpool.Pool, env environment.Environment, n int, seller, sellerAccount int64) [][]byte {
	t.Helper()
	ctx := t.Context()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const group = "matcher"
	m, err := matcher.New(matcher.Config{Kafka: kafka.Config{Brokers: brokers}, Group: group, InstanceID: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	defer func() { stop(); <-done; m.Close() }()

	clocks := make([]*ingress.Clock, n)
	for i := range clocks {
		if clocks[i], err = ingress.NewClock(env, ingress.DefaultConfig().Markets, pool, devkit.NewBeacon(pool), cl, log); err != nil {
			t.Fatal(err)
		}
	}
	start, end := env.BlockTime(0).Add(-65*time.Second), env.Times(4).Finality.Add(time.Second)
	ordersAt := env.BlockTime(2).Add(-10 * time.Second)
	placed := false
	for at := start; !at.After(end); at = at.Add(250 * time.Millisecond) {
		if !placed && !at.Before(ordersAt) {
			placeOrders(t, cl, 2, seller, sellerAccount, ordersAt)
			placed = true
		}
		// Two clocks interleave differently at every step.
		for i := range clocks {
			c := clocks[(i+int(at.UnixMilli()/250))%n]
			if err := c.Advance(ctx, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	return matcherOutputs(t, cl, group, topics.InstrumentID(topics.InclusionPreconf, 4))
}

// placeOrders sells slot's whole block from the seller at 1 ETH, buys it
// at that price from another account, and rests a bid that expires.
func placeOrders(t *testing.T, cl *kgo.Client, slot uint64, seller, sellerAccount int64, at time.Time) {
	t.Helper()
	layout, err := kafka.Layout(t.Context(), cl, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	inst := topics.InstrumentID(topics.WholeBlock, slot)
	for i, o := range []topics.OrderPlace{
		{OrderID: 1, UserID: seller, AccountID: sellerAccount, InstrumentID: inst, Side: false, OrderType: 2, Quantity: "1", Price: "1"},
		{OrderID: 2, UserID: 900, AccountID: 9000, InstrumentID: inst, Side: true, OrderType: 2, Quantity: "1", Price: "1"},
		{OrderID: 3, UserID: 901, AccountID: 9010, InstrumentID: inst, Side: true, OrderType: 2, Quantity: "1", Price: "0.5"},
	} {
		e, err := topics.OrderCommandEnvelope(topics.TypeOrderPlace, fmt.Sprintf("cmd-%d", i), at, o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewSlotRecord(topics.Orders, layout, slot, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// matcherOutputs waits until the matcher group has committed the whole
// of orders, which it does in the transactions that publish what those
// commands caused, then reads order-events and fills up to the broker's
// end offsets. The market.status of last must be finalized among them.
func matcherOutputs(t *testing.T, cl *kgo.Client, group, last string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	kafkatest.WaitConsumed(ctx, t, cl, group, topics.Orders)
	recs := append(kafkatest.ReadToEnd(ctx, t, cl, topics.OrderEvents), kafkatest.ReadToEnd(ctx, t, cl, topics.Fills)...)
	finalized := false
	for _, r := range recs {
		if bytes.Contains(r.Value, []byte(`"instrumentId":"`+last+`"`)) && bytes.Contains(r.Value, []byte(`"status":4`)) {
			finalized = true
		}
	}
	if !finalized {
		t.Fatalf("%s never finalized; %d outputs", last, len(recs))
	}
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = r.Value
	}
	return out
}
