package kafkaloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/matcher/internal/engine"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/kafka/kfakebroker"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/topics"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestMain(m *testing.M) { kafkatest.Main(m, proctest.RemoveBuilds) }

// startBroker returns the matcher's view of the test binary's shared
// broker, emptied for the test, with every catalog topic. Tests take it
// before they start the clock of their own context: a turn on the shared
// broker may take a while to come.
func startBroker(t testing.TB) kafka.Config {
	t.Helper()
	cl, brokers := kafkatest.Start(t)
	waitTopics(t, cl)
	return kafka.Config{Brokers: brokers, ClientID: "matcher-test"}
}

// brokerConfig creates every catalog topic on b and returns the matcher's
// view of it.
func brokerConfig(t testing.TB, b *kafkatest.Broker) kafka.Config {
	t.Helper()
	waitTopics(t, b.Client(t))
	return kafka.Config{Brokers: b.Addrs(), ClientID: "matcher-test"}
}

// waitTopics waits until the broker's metadata lists every catalog topic
// with a leader on each partition. A real broker answers CreateTopics once
// its controller has the topics, and its own metadata learns of them up to
// a second or more later; until then a listing of offsets, such as the one
// reading the slot layouts, finds no partition at all.
func waitTopics(t testing.TB, cl *kgo.Client) {
	t.Helper()
	want := map[string]int{}
	for _, topic := range topics.Catalog() {
		want[topic.Name] = int(topic.Partitions)
	}
	waitLeaders(t, cl, want)
}

// waitLeaders waits until fresh metadata lists each topic of want with at
// least its count of partitions, each with a leader.
func waitLeaders(t testing.TB, cl *kgo.Client, want map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	for {
		missing := topicsWithoutLeaders(ctx, adm, want)
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topics without a leader on every partition: %v", missing)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// topicsWithoutLeaders returns the topics of want that fresh metadata does
// not list whole.
func topicsWithoutLeaders(ctx context.Context, adm *kadm.Client, want map[string]int) []string {
	names := slices.Sorted(maps.Keys(want))
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
	if err != nil {
		return names
	}
	var missing []string
	for _, name := range names {
		d, ok := details[name]
		whole := ok && d.Err == nil && len(d.Partitions) >= want[name]
		for _, p := range d.Partitions {
			whole = whole && p.Err == nil && p.Leader >= 0
		}
		if !whole {
			missing = append(missing, name)
		}
	}
	return missing
}

// startEmbedded starts franz-go's in-process fake broker with every
// catalog topic; the benchmark compares it with the real broker.
func startEmbedded(t testing.TB, ctx context.Context) kafka.Config {
	t.Helper()
	e, err := kfakebroker.Start(ctx, kfakebroker.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cfg := kafka.Config{Brokers: e.Addrs(), ClientID: "matcher-test"}
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), topics.Catalog()); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// commandStream returns inputs for slots on several partitions: market
// opens, crossing and resting orders, cancels, republished duplicates and
// the trading_closed tick of every slot at the end.
func commandStream(t testing.TB, slots []uint64, perSlot int) []topics.Envelope {
	t.Helper()
	at := time.UnixMilli(1_738_824_000_000)
	var envs []topics.Envelope
	must := appender(t, &envs)
	for _, s := range slots {
		must(topics.MarketOpen{Slot: s, Family: topics.InclusionPreconf, PriceStep: "0.000000001", MinPrice: "0.000000001",
			MaxPrice: "0.000001", QuantityStep: "1000", MinQuantity: "1000", MaxQuantity: "1000000",
			SellerUserID: 1, SellerAccountID: 11, TotalPreconf: 10_000_000}.Envelope(at))
	}
	id := int64(0)
	for i := range perSlot {
		for _, s := range slots {
			id++
			o := topics.OrderPlace{OrderID: id, UserID: 2, AccountID: 21, InstrumentID: topics.InstrumentID(topics.InclusionPreconf, s),
				Side: true, OrderType: topics.OrderTypeLimit, Quantity: fmt.Sprint(1000 * (1 + i%7)), Price: fmt.Sprintf("0.00000000%d", 1+i%9)}
			if i%2 == 0 {
				o.UserID, o.AccountID, o.Side = 1, 11, false
			}
			cmdID := fmt.Sprintf("cmd-%d-%d", s, i)
			must(topics.OrderCommandEnvelope(topics.TypeOrderPlace, cmdID, at, o))
			if i%10 == 9 {
				envs = append(envs, envs[len(envs)-1]) // republished by the outbox
				must(topics.OrderCommandEnvelope(topics.TypeOrderCancel, cmdID+"-c", at,
					topics.OrderCancel{UserID: o.UserID, AccountID: o.AccountID, InstrumentID: o.InstrumentID, OrderID: id - 2}))
			}
		}
	}
	for _, s := range slots {
		must(topics.ClockTick{Slot: s, Kind: topics.TickTradingClosed}.Envelope(at))
	}
	return envs
}

// appender returns a function that appends an envelope to envs, failing
// the test if building it failed.
func appender(t testing.TB, envs *[]topics.Envelope) func(topics.Envelope, error) {
	return func(e topics.Envelope, err error) {
		if err != nil {
			t.Fatal(err)
		}
		*envs = append(*envs, e)
	}
}

func slotOf(t testing.TB, e topics.Envelope) uint64 {
	t.Helper()
	var v struct {
		Slot         uint64 `json:"slot"`
		InstrumentID string `json:"instrumentId"`
	}
	if err := e.UnmarshalData(&v); err != nil {
		t.Fatal(err)
	}
	if v.InstrumentID != "" {
		_, s, err := topics.ParseInstrumentID(v.InstrumentID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return v.Slot
}

// produceCommands writes envs to their slots' partitions of orders.
func produceCommands(t testing.TB, ctx context.Context, cfg kafka.Config, envs []topics.Envelope) {
	t.Helper()
	layout, _ := topics.DefaultLayout(topics.Orders)
	produceIn(t, ctx, cfg, layout, envs)
}

// produceIn writes envs to their slots' partitions of orders in layout.
func produceIn(t testing.TB, ctx context.Context, cfg kafka.Config, layout topics.SlotLayout, envs []topics.Envelope) {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, commandRecordsIn(t, layout, envs)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// commandRecords returns the orders records of envs, each on its slot's
// partition of the default layout.
func commandRecords(t testing.TB, envs []topics.Envelope) []*kgo.Record {
	t.Helper()
	layout, _ := topics.DefaultLayout(topics.Orders)
	return commandRecordsIn(t, layout, envs)
}

func commandRecordsIn(t testing.TB, layout topics.SlotLayout, envs []topics.Envelope) []*kgo.Record {
	t.Helper()
	var err error
	recs := make([]*kgo.Record, len(envs))
	for i, e := range envs {
		if recs[i], err = kafka.NewSlotRecord(topics.Orders, layout, slotOf(t, e), e); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// partitionKey names one partition of one output topic.
type partitionKey struct {
	topic     string
	partition int32
}

// expectedOutputs applies envs per partition to fresh engines, as the
// matcher must, and returns the record values it must publish.
func expectedOutputs(t testing.TB, envs []topics.Envelope) map[partitionKey][][]byte {
	t.Helper()
	layout, _ := topics.DefaultLayout(topics.Orders)
	return expectedOutputsIn(t, layout, envs)
}

// expectedOutputsIn is expectedOutputs with the partitions of layout.
func expectedOutputsIn(t testing.TB, layout topics.SlotLayout, envs []topics.Envelope) map[partitionKey][][]byte {
	t.Helper()
	engines := map[int32]*engine.Engine{}
	want := map[partitionKey][][]byte{}
	for _, e := range envs {
		p := layout.Partition(slotOf(t, e))
		if engines[p] == nil {
			engines[p] = engine.New()
		}
		outs, err := engines[p].Apply(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			b, err := topics.Encode(o.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			k := partitionKey{o.Topic, p}
			want[k] = append(want[k], b)
		}
	}
	return want
}

// readOutputs waits until the matcher group has committed the end of
// orders, which it does in the transactions that publish the outputs of
// what it read, then reads order events and fills up to the broker's end
// offsets: every output is there, and so is any duplicate.
func readOutputs(t testing.TB, ctx context.Context, cfg kafka.Config) map[partitionKey][][]byte {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	kafkatest.WaitConsumed(ctx, t, cl, DefaultGroup, topics.Orders)
	got := map[partitionKey][][]byte{}
	waitSettled(t, ctx, cl, topics.OrderEvents, topics.Fills)
	for _, topic := range []string{topics.OrderEvents, topics.Fills} {
		for _, r := range kafkatest.ReadToEnd(ctx, t, cl, topic) {
			k := partitionKey{r.Topic, r.Partition}
			got[k] = append(got[k], r.Value)
		}
	}
	return got
}

// waitSettled waits until no transaction is open on any partition of
// outs: each partition's last stable offset is its high watermark. A real
// broker's transaction coordinator writes the commit markers after it
// answered the commit, partition by partition, so the group's committed
// offsets can be readable while an output partition still waits for its
// marker and reads short of the transaction's records.
func waitSettled(t testing.TB, ctx context.Context, cl *kgo.Client, outs ...string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	for {
		open, err := openPartitions(ctx, adm, outs)
		if err == nil && len(open) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transactions still open on %v (last error %v)", open, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// openPartitions returns the partitions of outs whose last stable offset is
// below their high watermark.
func openPartitions(ctx context.Context, adm *kadm.Client, outs []string) ([]string, error) {
	stable, err := adm.ListCommittedOffsets(kadm.WithAuthorizedOps(ctx), outs...)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(kadm.WithAuthorizedOps(ctx), outs...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, err
	}
	var open []string
	ends.Each(func(end kadm.ListedOffset) {
		if s, ok := stable.Lookup(end.Topic, end.Partition); !ok || s.Offset < end.Offset {
			open = append(open, fmt.Sprintf("%s/%d", end.Topic, end.Partition))
		}
	})
	return open, nil
}

func newLoop(t testing.TB, cfg kafka.Config, maxPoll int) *Loop {
	t.Helper()
	l, err := New(Config{Kafka: cfg, TransactionalID: "matcher-test-0", MaxPollRecords: maxPoll,
		Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func assertSameOutputs(t *testing.T, got, want map[partitionKey][][]byte) {
	t.Helper()
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s[%d]: %d records, want %d", k.topic, k.partition, len(g), len(w))
			continue
		}
		for i := range w {
			if !bytes.Equal(g[i], w[i]) {
				t.Errorf("%s[%d] record %d:\ngot  %s\nwant %s", k.topic, k.partition, i, g[i], w[i])
				break
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s[%d]: %d unexpected records", k.topic, k.partition, len(g))
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var errCrash = errors.New("crash before commit")

// A matcher that dies in the middle of a transaction and restarts leaves
// exactly the outputs of an uninterrupted run, byte for byte: no gap, no
// duplicate, nothing of the aborted transaction.
func TestExactlyOnceAcrossACrash(t *testing.T) {
	cfg := startBroker(t)
	ctx := testContext(t)
	envs := commandStream(t, []uint64{100, 101, 117}, 120) // 100 and 116 share partition 4
	produceCommands(t, ctx, cfg, envs)
	want := expectedOutputs(t, envs)

	first := newLoop(t, cfg, 40)
	batches := 0
	first.beforeEnd = func() error {
		if batches++; batches == 4 {
			return errCrash
		}
		return nil
	}
	if err := first.Run(ctx); !errors.Is(err, errCrash) {
		t.Fatalf("first run ended with %v", err)
	}
	first.Close()
	if first.Stats().Outputs.Load() == 0 {
		t.Fatal("the first run produced nothing before its crash")
	}

	second := newLoop(t, cfg, 40)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- second.Run(runCtx) }()
	got := readOutputs(t, ctx, cfg)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	second.Close()
	assertSameOutputs(t, got, want)
	if second.Stats().Rebuilds.Load() == 0 {
		t.Error("the restarted matcher did not rebuild its engines from the log")
	}
	if second.Stats().Skipped.Load() != 0 {
		t.Errorf("%d records skipped", second.Stats().Skipped.Load())
	}
}

// A matcher started while no broker answers keeps trying to take its
// transactional id instead of ending Run with an error (a process would
// exit and restart in a loop); it stops cleanly when its context ends.
func TestRunWaitsForTheBrokers(t *testing.T) {
	l := newLoop(t, kafka.Config{Brokers: []string{"127.0.0.1:1"}}, 10)
	defer l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := l.Run(ctx); err != nil {
		t.Fatalf("Run ended with %v while no broker answered; want it to keep trying until its context ends", err)
	}
	if ctx.Err() == nil {
		t.Fatal("Run returned before its context ended")
	}
}

// The matcher's outputs are batches of the configured codec
// (KAFKA_COMPRESSION), not the client library's default.
func TestOutputsCarryTheConfiguredCodec(t *testing.T) {
	cfg := startBroker(t)
	ctx := testContext(t)
	cfg.Compression = "gzip"
	envs := commandStream(t, []uint64{100, 101}, 40)
	produceCommands(t, ctx, cfg, envs)
	l := newLoop(t, cfg, 40)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	readOutputs(t, ctx, cfg)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l.Close()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := kafkatest.ReadToEnd(ctx, t, cl, topics.OrderEvents)
	if len(recs) == 0 {
		t.Fatal("no order events")
	}
	const gzip = 1 // the codec id of the Kafka protocol
	for _, r := range recs {
		if c := r.Attrs.CompressionType(); c != gzip {
			t.Fatalf("order event at %d/%d in a batch of codec %d, want gzip", r.Partition, r.Offset, c)
		}
	}
}
