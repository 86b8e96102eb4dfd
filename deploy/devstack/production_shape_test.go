package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/deploy/cluster"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/settler"
	"blockspace.exchange/topics"
)

// shape is the production shape a drill runs on, and the clients that
// look at it from outside: the gateway, a pool on its database and a
// Kafka client of its brokers.
type shape struct {
	*cluster.Cluster
	c    client
	pool *pgxpool.Pool
	kcl  *kgo.Client
	adm  *kadm.Client
}

// TestProductionShape runs the failure drills of docs/deploy.md on the
// production shape that `make run-cluster` starts: three Apache Kafka
// brokers (replication 3, min.insync.replicas 2), each service a process
// of its own, two matchers and two query-api instances behind the nginx
// gateway. Every request goes through the gateway, as a client's does.
// The drills run one after the other on one cluster, each with a trader
// of its own, and the ledger audit, quiescent checks included, is clean
// after them all.
func TestProductionShape(t *testing.T) {
	t.Parallel()
	s := startShape(t)
	t.Run("the processes export what the dashboard and the alerts query", func(t *testing.T) { s.queriedMetricsExported(t) })
	t.Run("broker leading a live slot's orders partition killed", func(t *testing.T) { s.brokerLeaderKilled(t) })
	t.Run("rolling restart of every service under load", func(t *testing.T) { s.rollingRestart(t) })
	t.Run("matchers scaled 1, 3, 1 while trading", func(t *testing.T) { s.scaleMatchers(t) })
	t.Run("postgres restarted mid-stream", func(t *testing.T) { s.postgresRestarted(t) })
	if v, err := settler.AuditQuiescent(t.Context(), s.pool, 10); err != nil || len(v) > 0 {
		t.Fatalf("audit after the drills: %v %v", v, err)
	}
}

// drillSlot is the slot length of the drills' cluster, the 12 s of
// mainnet rather than the runner's 2 s: a whole-block market then opens
// 64 slots, almost 13 minutes, before its trading closes and its open
// orders expire, so every market a drill trades in outlives the drill
// however slow the machine (with 2 s slots a market lasts about two
// minutes, which a rolling restart on a loaded machine can take).
const drillSlot = 12 * time.Second

// drillMarketLife is the least trading time a drill's market has left
// when the drill picks it.
const drillMarketLife = 10 * time.Minute

func startShape(t *testing.T) *shape {
	t.Helper()
	// Port 0: the runner picks each public port as the gateway starts.
	public := map[string]string{}
	for _, port := range []string{"8080", "8081", "8082", "8083"} {
		public[port] = "127.0.0.1:0"
	}
	c, err := cluster.Start(t.Context(), cluster.Config{
		DataDir: worldTempDir(t), Public: public, KafkaAddrs: []string{"", "", ""}, QuickBrokers: true, SlotLength: drillSlot,
		// The runner's steps with their times, in the test's log (-v):
		// where the start of the cluster goes.
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	pool, err := postgres.Open(t.Context(), c.DatabaseURL(), postgres.Options{ApplicationName: "drills", ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	kcl, err := kafka.NewClient(kafka.Config{Brokers: c.Brokers(), ClientID: "drills"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kcl.Close)
	return &shape{Cluster: c, c: client{t: t, base: c.REST()}, pool: pool, kcl: kcl, adm: kadm.NewClient(kcl)}
}

// trader logs a new wallet in through the gateway, deposits amount ETH on
// the dev chain and moves toTrading of it to its trading account; crashLoad
// expects 10 and 5.
func (s *shape) trader(t *testing.T, amount, toTrading string) *trader {
	t.Helper()
	c := client{t: t, base: s.REST()}
	tr := logIn(t, c, newWallet(t))
	depositFor(t, s.Chain(), s.ChainURL(), 1, tr.addr, amount)
	tr.waitBalance("the deposit credited", tr.current, amount, "0")
	tr.transfer(tr.current, tr.preconf, toTrading)
	return tr
}

// leader is the broker that leads partition of topic now.
func (s *shape) leader(t *testing.T, topic string, partition int32) int32 {
	t.Helper()
	md, err := s.adm.Metadata(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok {
		t.Fatalf("no partition %d of %s in the metadata", partition, topic)
	}
	return p.Leader
}

// ordersPartition is the orders partition of instrument's slot.
func (s *shape) ordersPartition(t *testing.T, instrument string) int32 {
	t.Helper()
	_, slot, err := topics.ParseInstrumentID(instrument)
	if err != nil {
		t.Fatal(err)
	}
	layout, err := kafka.Layout(t.Context(), s.kcl, topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	return layout.Partition(slot)
}

// brokerLeaderKilled SIGKILLs the broker that leads the orders partition
// of a live market while a client places orders, transfers and
// withdraws through the gateway. Another replica takes the partition
// over and trading goes on while the broker is dead: it stays dead for
// outage and until the partition has a new leader and an order was
// acknowledged since the kill. It starts again on its data. Every
// acknowledged command has its effect exactly once.
func (s *shape) brokerLeaderKilled(t *testing.T) {
	tr := s.trader(t, "10", "5")
	instrument := lastingMarket(t, tr.c, drillMarketLife)
	partition := s.ordersPartition(t, instrument)
	leader := s.leader(t, topics.Orders, partition)
	load := newCrashLoad()
	for i := range 9 {
		load.send(t, tr, instrument, i)
	}
	node := s.Kafka().Node(int(leader))
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}
	killed, before := time.Now(), len(load.orders)
	moved := leader
	tradedOn := func() bool {
		if time.Since(killed) < outage || len(load.orders) == before {
			return false
		}
		moved = s.leader(t, topics.Orders, partition)
		return moved != leader && moved >= 0
	}
	i := 9
	for ; !tradedOn(); i++ {
		if time.Since(killed) > poll.Timeout {
			t.Fatalf("trading stopped with one broker of three: %s after the kill of broker %d, %d orders acknowledged since, orders partition %d led by %d",
				poll.Timeout, leader, len(load.orders)-before, partition, moved)
		}
		load.send(t, tr, instrument, i)
	}
	during := len(load.orders) - before
	if err := node.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for end := i + 9; i < end; i++ {
		load.send(t, tr, instrument, i)
	}
	t.Logf("broker %d led orders partition %d and was killed for %s; broker %d leads it now; %d orders acknowledged while it was dead, %d in all; refused %v, %d not covered by the funds left",
		leader, partition, time.Since(killed).Round(time.Second), moved, during, len(load.orders), load.refused, load.unfunded)
	load.waitApplied(t, s.pool, tr)
	load.checkMatcherAcceptedOnce(t, s.kcl)
}

// rollingRestart restarts every service instance in turn, as an
// orchestrator's rolling update does (SIGTERM, wait until the new process
// is ready, next), while a client keeps sending orders, transfers and
// withdrawals through the gateway. Every answer is an acceptance or a 503
// with Retry-After, and every acknowledged command is applied once.
func (s *shape) rollingRestart(t *testing.T) {
	tr := s.trader(t, "10", "5")
	instrument := lastingMarket(t, tr.c, drillMarketLife)
	load := newCrashLoad()
	done := make(chan error, 1)
	go func() {
		for _, in := range s.All() {
			if err := in.Stop(cluster.StopGrace); err != nil {
				done <- err
				return
			}
			if err := in.Start(context.Background(), 90*time.Second); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var restarted error
	for i := 0; ; i++ {
		load.send(t, tr, instrument, i)
		select {
		case restarted = <-done:
		default:
			continue
		}
		break
	}
	if restarted != nil {
		t.Fatal(restarted)
	}
	t.Logf("restarted %d instances; acknowledged %d orders, %d transfers, %d withdrawals; refused %v, %d not covered by the funds left",
		len(s.All()), len(load.orders), load.transfers, len(load.withdrawals), load.refused, load.unfunded)
	load.waitApplied(t, s.pool, tr)
	load.checkMatcherAcceptedOnce(t, s.kcl)
}

// A whole-block market's book in the scaling drill: the seller offers
// the block at 0.5 and a buyer bids 0.4 (both rest), then the buyer bids
// 0.6, which takes the offer at its price.
const (
	scaleAsk, scaleLowBid, scaleHighBid = "0.5", "0.4", "0.6"
)

// bookOrders are the three orders of a scaling drill's market.
type bookOrders struct{ ask, lowBid, highBid int64 }

// scaleMatchers trades in several slots while the matchers go from one
// instance to three and back to one. Books placed before each step are
// still there after it (the high bid placed after the step fills against
// the offer placed before it), the orders partitions spread over the
// instances, and every market ends as a market traded with no scaling.
func (s *shape) scaleMatchers(t *testing.T) {
	seller := logIn(t, s.c, demoWallet(t))
	buyer := s.trader(t, "10", "9")
	slots := lastingSlots(t, s.c, 6)
	for len(s.Instances("matcher")) > 1 {
		if err := s.RemoveInstance("matcher"); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMatcherMembers(t, 1)
	rest := func(slot uint64) bookOrders {
		instrument := topics.InstrumentID(topics.WholeBlock, slot)
		return bookOrders{
			ask:    seller.place(map[string]any{"accountId": seller.preconf, "instrumentId": instrument, "side": false, "orderType": 2, "quantity": "1", "price": scaleAsk}),
			lowBid: buyer.place(map[string]any{"accountId": buyer.preconf, "instrumentId": instrument, "side": true, "orderType": 2, "quantity": "1", "price": scaleLowBid}),
		}
	}
	cross := func(slot uint64, b *bookOrders) {
		instrument := topics.InstrumentID(topics.WholeBlock, slot)
		b.highBid = buyer.place(map[string]any{"accountId": buyer.preconf, "instrumentId": instrument, "side": true, "orderType": 2, "quantity": "1", "price": scaleHighBid})
	}
	books := make([]bookOrders, len(slots))
	// Slots 0 and 1 trade with one matcher throughout: the reference.
	for i := range 2 {
		books[i] = rest(slots[i])
		cross(slots[i], &books[i])
	}
	// Slots 2 and 3 rest with one matcher and cross with three.
	books[2], books[3] = rest(slots[2]), rest(slots[3])
	for range 2 {
		if _, err := s.AddInstance(t.Context(), "matcher"); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMatcherMembers(t, 3)
	cross(slots[2], &books[2])
	cross(slots[3], &books[3])
	// Slots 4 and 5 rest with three matchers and cross with one.
	books[4], books[5] = rest(slots[4]), rest(slots[5])
	for range 2 {
		if err := s.RemoveInstance("matcher"); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMatcherMembers(t, 1)
	cross(slots[4], &books[4])
	cross(slots[5], &books[5])

	sellerOrders, buyerOrders := seller.orders(topics.WholeBlock), buyer.orders(topics.WholeBlock)
	outcome := func(b bookOrders) string {
		return fmt.Sprintf("ask %s, low bid %s, high bid %s",
			orderOutcome(sellerOrders[b.ask]), orderOutcome(buyerOrders[b.lowBid]), orderOutcome(buyerOrders[b.highBid]))
	}
	for i := range books {
		seller.waitOrders("the slot's offer filled", topics.WholeBlock, map[int64]int{books[i].ask: topics.OrderStatusDone})
		buyer.waitOrders("the slot's bids decided", topics.WholeBlock, map[int64]int{books[i].lowBid: topics.OrderStatusOnBook, books[i].highBid: topics.OrderStatusDone})
	}
	// A done order's fill may be read a moment after its status: the
	// settler can apply an order event and its fill in two transactions.
	// Every slot must come to the reference's outcome, its fills included.
	var differ []string
	poll.Before(t, "every slot's outcome as the reference's, fills applied", time.Now().Add(poll.Timeout), func() bool {
		sellerOrders, buyerOrders = seller.orders(topics.WholeBlock), buyer.orders(topics.WholeBlock)
		want := outcome(books[0])
		differ = differ[:0]
		for i, b := range books {
			if got := outcome(b); got != want || !strings.Contains(want, "filled 1 at "+scaleAsk) {
				differ = append(differ, fmt.Sprintf("slot %d (%s): %s; with no scaling: %s", slots[i], []string{"reference", "reference", "1 → 3", "1 → 3", "3 → 1", "3 → 1"}[i], got, want))
			}
		}
		return len(differ) == 0
	}, func() string { return strings.Join(differ, "\n") })
	// The drill ends with the cluster's two matchers.
	if _, err := s.AddInstance(t.Context(), "matcher"); err != nil {
		t.Fatal(err)
	}
	s.waitMatcherMembers(t, 2)
}

// orderOutcome is what the scaling drill compares of an order.
func orderOutcome(o ownOrder) string {
	return fmt.Sprintf("status %d, filled %s at %s", o.Status, o.Fulfilled, o.AverageTradePrice.Decimal)
}

// lastingSlots are n open whole-block markets' slots that stay open for
// drillMarketLife or longer, the latest first.
func lastingSlots(t *testing.T, c client, n int) []uint64 {
	t.Helper()
	var slots []uint64
	poll.Until(t, fmt.Sprintf("%d open whole-block markets", n), func() bool {
		slots = slots[:0]
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if m.Status == topics.MarketStatusOpen && time.UnixMilli(m.MaturityTime).After(time.Now().Add(drillMarketLife)) {
				slots = append(slots, m.Slot)
			}
		}
		return len(slots) >= n
	})
	slices.Sort(slots)
	slices.Reverse(slots)
	return slots[:n]
}

// waitMatcherMembers waits until the matchers' consumer group is stable
// with n members that share every orders partition, each holding some.
func (s *shape) waitMatcherMembers(t *testing.T, n int) {
	t.Helper()
	md, err := s.adm.Metadata(t.Context(), topics.Orders)
	if err != nil {
		t.Fatal(err)
	}
	partitions := len(md.Topics[topics.Orders].Partitions)
	var last string
	poll.Before(t, fmt.Sprintf("%d matchers sharing the orders partitions", n), time.Now().Add(poll.Timeout), func() bool {
		described, err := s.adm.DescribeGroups(t.Context(), "matcher")
		if err != nil {
			last = err.Error()
			return false
		}
		g := described["matcher"]
		last = fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
		if g.State != "Stable" || len(g.Members) != n {
			return false
		}
		held := map[int32]bool{}
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				return false
			}
			var mine int
			for _, tp := range a.Topics {
				if tp.Topic == topics.Orders {
					mine += len(tp.Partitions)
					for _, p := range tp.Partitions {
						held[p] = true
					}
				}
			}
			if mine == 0 {
				last += "; a member holds no orders partition"
				return false
			}
		}
		return len(held) == partitions
	}, func() string { return last })
}

// postgresRestarted stops the database while a client sends orders,
// transfers and withdrawals through the gateway and reads its accounts.
// Meanwhile writes and reads answer 503 with Retry-After (or are
// accepted, before the services notice); the database stays down for
// 10 s and until a write and a read were refused. Once it is back every
// service is ready again by itself, and every acknowledged command is
// applied once.
func (s *shape) postgresRestarted(t *testing.T) {
	tr := s.trader(t, "10", "5")
	instrument := lastingMarket(t, tr.c, drillMarketLife)
	load := newCrashLoad()
	for i := range 9 {
		load.send(t, tr, instrument, i)
	}
	if err := s.StopPostgres(t.Context()); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	i := 9
	var readRefused int
	for ; time.Since(stopped) < 10*time.Second || load.refused[503] == 0 || readRefused == 0; i++ {
		if time.Since(stopped) > poll.Timeout {
			t.Fatalf("with the database down for %s, %d writes and %d reads were refused with 503", poll.Timeout, load.refused[503], readRefused)
		}
		load.send(t, tr, instrument, i)
		a := tr.send("GET", "/api/v1/user/accounts", nil)
		switch {
		case a.status == 503 && a.header.Get("Retry-After") != "":
			readRefused++
		case a.status != 200:
			t.Fatalf("a read while the database is down answered %d (Retry-After %q): %s", a.status, a.header.Get("Retry-After"), a.raw)
		}
	}
	down := time.Since(stopped)
	if err := s.StartPostgres(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, in := range s.All() {
		if err := in.WaitReady(t.Context(), 90*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for end := i + 9; i < end; i++ {
		load.send(t, tr, instrument, i)
	}
	t.Logf("database down for %s; acknowledged %d orders, %d transfers, %d withdrawals; refused %v, %d not covered by the funds left; %d reads refused",
		down.Round(time.Second), len(load.orders), load.transfers, len(load.withdrawals), load.refused, load.unfunded, readRefused)
	load.waitApplied(t, s.pool, tr)
	load.checkMatcherAcceptedOnce(t, s.kcl)
}
