package outbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

// TestRelayRepublishesToTheSlotsPartition leaves a slot command and a
// ledger command in the outbox: the relay publishes the slot command to
// its slot's partition of the layout it reads (not the key hash, not the
// catalog's default), the other by key, and deletes both rows.
func TestRelayRepublishesToTheSlotsPartition(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	cl, brokers := kafkatest.Start(t)
	const slot = 1021 // partition 5 of 8, 13 of the default 16
	layout := topics.SlotLayout{Topic: topics.Orders, Epochs: []topics.Epoch{{FromSlot: 0, Partitions: 8}}}
	place, err := topics.OrderCommandEnvelope(topics.TypeOrderPlace, "order:7", time.Now(), topics.OrderPlace{OrderID: 7, InstrumentID: "ETH-WB-1021"})
	if err != nil {
		t.Fatal(err)
	}
	transfer, err := topics.FundingEnvelope(topics.TypeLedgerTransfer, "transfer-1", time.Now(), topics.LedgerTransfer{TransferID: 1})
	if err != nil {
		t.Fatal(err)
	}
	placeRec, err := kafka.NewSlotRecord(topics.Orders, layout, slot, place)
	if err != nil {
		t.Fatal(err)
	}
	transferRec, err := kafka.NewRecord(topics.LedgerCommands, topics.UserKey(3), transfer)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, r := range []*kgo.Record{placeRec, transferRec} {
			if _, err := Enqueue(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	o := New(pool, cl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	o.RelayAge = 0
	reg := prometheus.NewRegistry()
	o.Metrics = NewMetrics(pool)
	reg.MustRegister(o.Metrics)
	if _, err := pool.Exec(ctx, `UPDATE outbox SET created = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	before := metricstest.Gather(t, reg)
	if before["outbox_pending_rows"] != 2 || before["outbox_oldest_pending_age_seconds"] < 60 {
		t.Fatalf("before the relay: %v, want 2 rows, the oldest a minute old", before)
	}
	o.Layout = func(_ context.Context, family string) (topics.SlotLayout, error) {
		if family != topics.Orders {
			t.Errorf("layout of %q read", family)
		}
		return layout, nil
	}
	if n, err := o.RelayOnce(ctx, 10); err != nil || n != 2 {
		t.Fatalf("relayed %d: %v", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left (%v)", left, err)
	}
	after := metricstest.Gather(t, reg)
	want := map[string]float64{"outbox_pending_rows": 0, "outbox_oldest_pending_age_seconds": 0, "outbox_published_total": 2, "outbox_publish_failures_total": 0}
	if !maps.Equal(after, want) {
		t.Fatalf("after the relay: %v, want %v", after, want)
	}
	got := map[string]*kgo.Record{}
	reader, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ConsumeTopics(topics.Orders, topics.LedgerCommands))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for len(got) < 2 {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := reader.PollFetches(pctx)
		timedOut := pctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("records read: %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = r })
	}
	if r := got[topics.Orders]; r.Partition != 5 || string(r.Key) != "1021" || string(r.Value) != string(placeRec.Value) {
		t.Errorf("place republished to partition %d, key %s: %s", r.Partition, r.Key, r.Value)
	}
	if r := got[topics.LedgerCommands]; string(r.Key) != "3" || string(r.Value) != string(transferRec.Value) {
		t.Errorf("transfer republished as %s: %s", r.Key, r.Value)
	}
}

// migrations are the exchange's schema. The settler module owns it; the
// platform module cannot import it.
func migrations() fs.FS { return os.DirFS("../../settler/schema/migrations") }

// TestEnqueueAllPairsIDsWithRecords: the rows EnqueueAll writes in one
// statement, after a row already in the table, come back paired with
// their own records; no records write nothing.
func TestEnqueueAllPairsIDsWithRecords(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: topics.LedgerCommands, Key: []byte{byte(i)}, Value: []byte{byte(i), 'v'}})
	}
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (topic, key, value) VALUES ('x', 'k', 'before')`); err != nil {
		t.Fatal(err)
	}
	var ps []Pending
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		ps, err = EnqueueAll(ctx, tx, recs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(recs) {
		t.Fatalf("%d pending for %d records", len(ps), len(recs))
	}
	for i, p := range ps {
		var key, value []byte
		if err := pool.QueryRow(ctx, `SELECT key, value FROM outbox WHERE outbox_id = $1`, p.ID).Scan(&key, &value); err != nil {
			t.Fatal(err)
		}
		if p.Record != recs[i] || string(key) != string(recs[i].Key) || string(value) != string(recs[i].Value) {
			t.Fatalf("pending %d: row %d holds %x/%x, want %x/%x", i, p.ID, key, value, recs[i].Key, recs[i].Value)
		}
	}
	if ps, err := EnqueueAll(ctx, nil, nil); ps != nil || err != nil {
		t.Fatalf("no records: %v, %v", ps, err)
	}
}

// TestRelayDeletesWhatKafkaTookWhenItRefusesARow: Kafka refuses one row
// of a relay round (larger than its topic's max.message.bytes). The
// rows it acknowledged are deleted and published once, however many
// rounds follow; the refused row stays, and each round reports it.
func TestRelayDeletesWhatKafkaTookWhenItRefusesARow(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	cl, _ := kafkatest.Start(t)
	const maxBytes = 4096
	altered, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr(strconv.Itoa(maxBytes))}}, topics.LedgerCommands)
	if err == nil {
		var r kadm.AlterConfigsResponse
		r, err = altered.On(topics.LedgerCommands, nil)
		if err == nil {
			err = r.Err
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	// The small records share a partition; the large one is on another,
	// so that no batch holds both.
	transfer := func(id int, key []byte, quantity string) *kgo.Record {
		e, err := topics.FundingEnvelope(topics.TypeLedgerTransfer, fmt.Sprintf("transfer-%d", id), time.Now(),
			topics.LedgerTransfer{TransferID: int64(id), Quantity: quantity})
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewRecord(topics.LedgerCommands, key, e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, transfer(i, topics.UserKey(1), "1"))
	}
	// Random digits, so that the batch stays large once compressed.
	rng := rand.New(rand.NewPCG(1, 2))
	digits := make([]byte, 4*maxBytes)
	for i := range digits {
		digits[i] = byte('0' + rng.IntN(10))
	}
	large := transfer(10, topics.UserKey(2), string(digits))
	partition := func(r *kgo.Record) int32 {
		return int32(kafka.Partitioner().ForTopic(r.Topic).Partition(r, 8))
	}
	for user := int64(2); partition(large) == partition(recs[0]); user++ {
		large = transfer(10, topics.UserKey(user), string(digits))
	}
	recs = append(recs[:5], append([]*kgo.Record{large}, recs[5:]...)...)
	var largeID int64
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		ps, err := EnqueueAll(ctx, tx, recs)
		largeID = ps[5].ID
		return err
	}); err != nil {
		t.Fatal(err)
	}

	o := New(pool, cl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	o.RelayAge = 0
	o.Metrics = NewMetrics(pool)
	for round := range 3 {
		n, err := o.RelayOnce(ctx, 100)
		if err == nil || !strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") {
			t.Fatalf("round %d relayed %d: %v; want the large row refused with MESSAGE_TOO_LARGE", round, n, err)
		}
		if err := o.deleteConfirmed(ctx); err != nil {
			t.Fatal(err)
		}
		var left []int64
		rows, err := pool.Query(ctx, `SELECT outbox_id FROM outbox`)
		if err == nil {
			left, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil || len(left) != 1 || left[0] != largeID {
			t.Fatalf("round %d left rows %v (%v); want only the large one, %d", round, left, err, largeID)
		}
	}
	if n := testutil.ToFloat64(o.Metrics.failures); n != 3 {
		t.Fatalf("failed rounds counted %v, want 3", n)
	}
	if n := testutil.ToFloat64(o.Metrics.published); n != 0 {
		t.Fatalf("published rows counted %v, want 0: every round rolled back", n)
	}
	got := map[string]int{}
	for _, r := range kafkatest.ReadToEnd(ctx, t, cl, topics.LedgerCommands) {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		got[e.ID]++
	}
	if len(got) != 10 {
		t.Fatalf("published %v; want the 10 small records", got)
	}
	for id, n := range got {
		if n != 1 || id == "transfer-10" {
			t.Fatalf("%s published %d times", id, n)
		}
	}
}
