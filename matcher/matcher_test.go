package matcher_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// The package entry runs in-process against a real broker: a market
// opens, a sell rests, a buy crosses it, and the fill is published.
func TestRunPublishesAFill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, brokers := kafkatest.Start(t)
	cfg := kafka.Config{Brokers: brokers, ClientID: "matcher-test"}
	cl, err := kafka.NewClient(cfg, kgo.ConsumeTopics(topics.Fills), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	m, err := matcher.New(matcher.Config{Kafka: cfg, InstanceID: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := m.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()

	at := time.UnixMilli(1_738_824_000_000)
	open, err := topics.MarketOpen{Slot: 7, Family: topics.WholeBlock, PriceStep: "0.01", MinPrice: "0.01", MaxPrice: "10",
		SellerUserID: 1, SellerAccountID: 11}.Envelope(at)
	if err != nil {
		t.Fatal(err)
	}
	sell := topics.OrderPlace{OrderID: 1, UserID: 1, AccountID: 11, InstrumentID: "ETH-WB-7", OrderType: topics.OrderTypeLimit, Quantity: "1", Price: "0.5"}
	buy := topics.OrderPlace{OrderID: 2, UserID: 2, AccountID: 21, InstrumentID: "ETH-WB-7", Side: true, OrderType: topics.OrderTypeLimit, Quantity: "1", Price: "0.7"}
	rests := topics.OrderPlace{OrderID: 3, UserID: 3, AccountID: 31, InstrumentID: "ETH-WB-7", Side: true, OrderType: topics.OrderTypeLimit, Quantity: "1", Price: "0.3"}
	layout, _ := topics.DefaultLayout(topics.Orders)
	var recs []*kgo.Record
	for i, cmd := range []any{open, sell, buy, rests} {
		env, ok := cmd.(topics.Envelope)
		if !ok {
			env, err = topics.OrderCommandEnvelope(topics.TypeOrderPlace, "cmd-"+string(rune('a'+i)), at, cmd)
			if err != nil {
				t.Fatal(err)
			}
		}
		r, err := kafka.NewSlotRecord(topics.Orders, layout, 7, env)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var fill topics.Fill
	for fill.TradeID == 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no fill published")
		}
		fetches.EachRecord(func(r *kgo.Record) {
			env, err := kafka.DecodeRecord(r)
			if err != nil || r.Partition != layout.Partition(7) {
				t.Fatalf("fill record on partition %d: %v", r.Partition, err)
			}
			if err := json.Unmarshal(env.Data, &fill); err != nil {
				t.Fatal(err)
			}
		})
	}
	// One book (the whole-block market of slot 7) with the last buy
	// resting in it; every record applied.
	part := strconv.Itoa(int(layout.Partition(7)))
	want := map[string]float64{
		"matcher_books": 1, "matcher_resting_orders": 1,
		`kafka_consumer_records_total{group="matcher",topic="orders"}`:                        4,
		`kafka_consumer_lag_records{group="matcher",partition="` + part + `",topic="orders"}`: 0,
	}
	var got map[string]float64
	poll.Before(t, "the metrics of four records", time.Now().Add(poll.Timeout), func() bool {
		got = metricstest.Gather(t, reg)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				return false
			}
		}
		return true
	}, func() string { return metricstest.Dump(metricstest.Prefixed(got, "")) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	m.Close()
	if fill.Price != "0.5" || fill.MakerOrderID != 1 || fill.TakerOrderID != 2 || !fill.PrimarySale || fill.PreconfQuantity != "0" {
		t.Fatalf("fill %+v", fill)
	}
}
