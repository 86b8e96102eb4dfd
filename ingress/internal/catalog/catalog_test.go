package catalog

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/market"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

func open(f topics.Family, slot uint64) topics.MarketOpen {
	m := topics.MarketOpen{Slot: slot, Family: f, PriceStep: "0.0001", MinPrice: "0.0001", MaxPrice: "100",
		SellerUserID: 1, SellerAccountID: 2, TotalPreconf: 100, BuyFeeRate: "0.001"}
	if f == topics.InclusionPreconf {
		m.PriceStep, m.MinPrice, m.MaxPrice = "0.000000001", "0.000000001", "0.000001"
		m.QuantityStep, m.MinQuantity, m.MaxQuantity = "1000", "21000", "18000000"
	}
	return m
}

func openEnvelope(t *testing.T, m topics.MarketOpen) topics.Envelope {
	t.Helper()
	e, err := m.Envelope(time.UnixMilli(1))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func statusEnvelope(t *testing.T, f topics.Family, slot uint64, status int) topics.Envelope {
	t.Helper()
	e, err := topics.NewEnvelope(topics.TypeMarketStatus, topics.MatcherEventVersion, "oe:1", time.UnixMilli(1), topics.MarketStatus{
		MarketID: topics.MarketID(f, slot), InstrumentID: topics.InstrumentID(f, slot), Slot: slot, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestApplyFollowsOpensAndStatuses(t *testing.T) {
	c := New()
	now := time.UnixMilli(1_000_000)
	apply := func(e topics.Envelope) {
		t.Helper()
		if err := c.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	matured := open(topics.WholeBlock, 4)
	matured.MaturityTime = now.Add(-time.Second).UnixMilli()
	apply(openEnvelope(t, open(topics.WholeBlock, 1)))
	apply(openEnvelope(t, open(topics.InclusionPreconf, 1)))
	apply(statusEnvelope(t, topics.WholeBlock, 2, topics.MarketStatusTradingClosed)) // before its open
	apply(openEnvelope(t, open(topics.WholeBlock, 2)))
	apply(openEnvelope(t, open(topics.WholeBlock, 3)))
	apply(statusEnvelope(t, topics.WholeBlock, 3, topics.MarketStatusFinalized))
	apply(openEnvelope(t, open(topics.WholeBlock, 3))) // a late duplicate
	apply(openEnvelope(t, matured))
	apply(statusEnvelope(t, topics.WholeBlock, 1, topics.MarketStatusOpen))

	for _, tc := range []struct {
		instrument string
		known      bool
		open       bool
	}{
		{"ETH-WB-1", true, true},
		{"ETH-PC-1", true, true},
		{"ETH-WB-2", true, false},
		{"ETH-WB-3", false, false},
		{"ETH-WB-4", true, false},
		{"ETH-WB-5", false, false},
	} {
		m := c.Lookup(tc.instrument)
		if (m != nil) != tc.known || (m != nil && m.Open(now) != tc.open) {
			t.Errorf("%s: %+v, want known %t open %t", tc.instrument, m, tc.known, tc.open)
		}
	}
	m := c.Lookup("ETH-PC-1")
	want, err := market.New(open(topics.InclusionPreconf, 1))
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != topics.MarketID(topics.InclusionPreconf, 1) || m.SellerAccountID != 2 || !paramsEqual(m.Params, want) {
		t.Errorf("market %+v", m)
	}
	if wb := c.Lookup("ETH-WB-1"); wb.QuantityStep != 1 || wb.MinQuantity != 1 || wb.MaxQuantity != 1 {
		t.Errorf("whole-block quantities %+v", wb)
	}
	if n := len(c.Family(topics.WholeBlock)); n != 3 {
		t.Errorf("%d whole-block markets", n)
	}
}

func paramsEqual(a, b market.Params) bool {
	return a.PriceStep.Equal(b.PriceStep) && a.MinPrice.Equal(b.MinPrice) && a.MaxPrice.Equal(b.MaxPrice) &&
		a.QuantityStep == b.QuantityStep && a.MinQuantity == b.MinQuantity && a.MaxQuantity == b.MaxQuantity &&
		a.Fees.Buy.Equal(b.Fees.Buy) && a.Open == b.Open
}

// TestCatalogRefusesWhatTheMatcherRefuses: a market the matcher leaves
// closed must not be open in the catalog.
func TestCatalogRefusesWhatTheMatcherRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*topics.MarketOpen)
	}{
		{"zero step", func(m *topics.MarketOpen) { m.PriceStep = "0" }},
		{"min off the step", func(m *topics.MarketOpen) { m.MinPrice = "0.0000000015" }},
		{"max below min", func(m *topics.MarketOpen) { m.MinPrice = "0.000002" }},
		{"fee of 1", func(m *topics.MarketOpen) { m.BuyFeeRate = "1" }},
		{"negative sell fee", func(m *topics.MarketOpen) { m.SecondarySellFeeRate = "-0.1" }},
		{"no seller", func(m *topics.MarketOpen) { m.SellerAccountID = 0 }},
		{"quantity step not an integer", func(m *topics.MarketOpen) { m.QuantityStep = "1.5" }},
		{"max quantity below min", func(m *topics.MarketOpen) { m.MaxQuantity = "1000" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := open(topics.InclusionPreconf, 9)
			tc.change(&m)
			c := New()
			if err := c.Apply(openEnvelope(t, m)); err == nil || c.Lookup("ETH-PC-9") != nil {
				t.Fatalf("accepted: %v", err)
			}
		})
	}
}

// TestFeedIsReadyAfterReadingTheLog writes opens, and statuses in a
// transaction as the matcher does (its commit marker is the partition's
// last offset), and expects the catalog ready with all of them applied,
// then to follow records written later.
func TestFeedIsReadyAfterReadingTheLog(t *testing.T) {
	ctx := t.Context()
	cl, brokers := kafkatest.Start(t)
	layout, _ := topics.DefaultLayout(topics.Orders)
	record := func(topic string, slot uint64, e topics.Envelope) *kgo.Record {
		r, err := kafka.NewSlotRecord(topic, layout, slot, e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for slot := uint64(100); slot < 104; slot++ {
		if err := cl.ProduceSync(ctx, record(topics.Orders, slot, openEnvelope(t, open(topics.WholeBlock, slot)))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.TransactionalID("test-matcher"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, slot := range []uint64{101, 102} {
		if err := txn.ProduceSync(ctx, record(topics.OrderEvents, slot, statusEnvelope(t, topics.WholeBlock, slot, topics.MarketStatusTradingClosed))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The commit returns once the coordinator has decided it; it writes
	// the markers afterwards, and until then the partitions' last stable
	// offsets stop before the statuses, which a feed starting now would
	// not wait for.
	poll.Until(t, "the statuses' commit markers written", func() bool { return stable(ctx, cl, topics.OrderEvents) })

	c := New()
	feed, err := NewFeed(cl, time.Now().Add(-time.Hour), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	lag := kafka.NewLag("ingress-catalog")
	feed.CountIn(lag)
	reg := prometheus.NewRegistry()
	reg.MustRegister(lag)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- feed.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	poll.Until(t, "catalog ready", func() bool { return c.Err() == nil })
	// The feed reads the commit marker too: caught up, the transactional
	// partitions show no lag either.
	var lags map[string]float64
	poll.Before(t, "no lag once ready", time.Now().Add(poll.Timeout), func() bool {
		lags = metricstest.Prefixed(metricstest.Gather(t, reg), "kafka_consumer_lag_records")
		events := 0
		for k, v := range lags {
			if v != 0 {
				return false
			}
			if strings.Contains(k, `topic="order-events"`) {
				events++
			}
		}
		return events > 0
	}, func() string { return metricstest.Dump(lags) })
	now := time.Now()
	for slot, open := range map[uint64]bool{100: true, 101: false, 102: false, 103: true} {
		m := c.Lookup(topics.InstrumentID(topics.WholeBlock, slot))
		if m == nil || m.Open(now) != open {
			t.Errorf("slot %d: %+v, want open %t", slot, m, open)
		}
	}
	if err := cl.ProduceSync(ctx, record(topics.OrderEvents, 100, statusEnvelope(t, topics.WholeBlock, 100, topics.MarketStatusFinalized))).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "finalized market forgotten", func() bool { return c.Lookup("ETH-WB-100") == nil })
}

func TestFeedOfAnEmptyLogIsReady(t *testing.T) {
	ctx := t.Context()
	cl, _ := kafkatest.Start(t)
	c := New()
	if c.Err() == nil {
		t.Fatal("a new catalog is ready")
	}
	feed, err := NewFeed(cl, time.Now().Add(-time.Hour), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- feed.Run(runCtx) }()
	poll.Until(t, "catalog ready", func() bool { return c.Err() == nil })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// stable reports whether every partition of topic has its last stable
// offset at its end: no transaction is open on it.
func stable(ctx context.Context, cl *kgo.Client, topic string) bool {
	adm := kadm.NewClient(cl)
	// Authorized operations bypass the client's metadata cache.
	ends, err := adm.ListEndOffsets(kadm.WithAuthorizedOps(ctx), topic)
	if err != nil || ends.Error() != nil {
		return false
	}
	lsos, err := adm.ListCommittedOffsets(kadm.WithAuthorizedOps(ctx), topic)
	if err != nil || lsos.Error() != nil {
		return false
	}
	ok := true
	ends.Each(func(e kadm.ListedOffset) {
		if l, found := lsos.Lookup(topic, e.Partition); !found || l.Offset != e.Offset {
			ok = false
		}
	})
	return ok
}
