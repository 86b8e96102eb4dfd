package kafka

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no brokers", Config{}, "KAFKA_BROKERS"},
		{"broker without port", Config{Brokers: []string{"kafka"}}, `"kafka" is not host:port`},
		{"negative linger", Config{Brokers: []string{"kafka:9092"}, Linger: -time.Second}, "negative"},
		{"unknown codec", Config{Brokers: []string{"kafka:9092"}, Compression: "brotli"}, `compression "brotli": want snappy, lz4, zstd, gzip or none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewClient(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewClientDefaults(t *testing.T) {
	cl, err := NewClient(Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if id, _ := cl.OptValue(kgo.ClientID).(string); id != DefaultClientID {
		t.Errorf("client id %q", id)
	}
	if linger, _ := cl.OptValue(kgo.ProducerLinger).(time.Duration); linger != DefaultLinger {
		t.Errorf("linger %v", linger)
	}
	if level, _ := cl.OptValue(kgo.FetchIsolationLevel).(int8); level != 1 { // 1 is read_committed in the Kafka protocol
		t.Errorf("isolation level %v, want read committed", level)
	}
}

// The partitioner must honour the layout's partition on slot topics and
// hash by key everywhere else, whatever Partition a caller left set.
func TestPartitionerFollowsTheCatalog(t *testing.T) {
	p := Partitioner()
	slotRecord := &kgo.Record{Topic: topics.Orders, Key: []byte("7"), Partition: 5}
	if got := p.ForTopic(topics.Orders).Partition(slotRecord, 16); got != 5 {
		t.Errorf("orders record went to %d, want the producer's 5", got)
	}
	hashed := kgo.StickyKeyPartitioner(nil).ForTopic(topics.LedgerCommands)
	for _, key := range []string{"1", "42", "1000007"} {
		r := &kgo.Record{Topic: topics.LedgerCommands, Key: []byte(key), Partition: 5}
		want := hashed.Partition(r, 8)
		if got := p.ForTopic(topics.LedgerCommands).Partition(r, 8); got != want {
			t.Errorf("key %s went to %d, want murmur2's %d", key, got, want)
		}
	}
}

func TestRecordsCarryTheEnvelope(t *testing.T) {
	env := mustEnvelope(t, topics.TypeLedgerTransfer, "cmd-1", map[string]string{"quantity": "1.5"})
	r, err := NewRecord(topics.LedgerCommands, []byte("9"), env)
	if err != nil {
		t.Fatal(err)
	}
	if typ, version, ok := RecordType(r); !ok || typ != topics.TypeLedgerTransfer || version != 1 {
		t.Fatalf("headers give %q %d %v", typ, version, ok)
	}
	back, err := DecodeRecord(r)
	if err != nil || !reflect.DeepEqual(back, env) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	if _, _, ok := RecordType(&kgo.Record{Headers: []kgo.RecordHeader{{Key: "type", Value: []byte("a.b")}}}); ok {
		t.Error("RecordType accepted a record without a version header")
	}
	r.Value = []byte(`{"type":"a.b"}`)
	if _, err := DecodeRecord(r); !errors.Is(err, topics.ErrInvalidEnvelope) || !strings.Contains(err.Error(), topics.LedgerCommands) {
		t.Fatalf("DecodeRecord error %v, want ErrInvalidEnvelope naming the topic", err)
	}
}

func TestRecordConstructorsCheckTheTopic(t *testing.T) {
	env := mustEnvelope(t, topics.TypeOrderPlace, "cmd-2", map[string]int{"a": 1})
	orders, _ := topics.DefaultLayout(topics.Orders)
	if _, err := NewRecord(topics.Orders, []byte("1"), env); err == nil {
		t.Error("NewRecord accepted a slot-partitioned topic")
	}
	if _, err := NewRecord("nope", []byte("1"), env); err == nil {
		t.Error("NewRecord accepted an unknown topic")
	}
	if _, err := NewSlotRecord(topics.LedgerCommands, orders, 1, env); err == nil {
		t.Error("NewSlotRecord accepted a key-hashed topic")
	}
	other := topics.SlotLayout{Topic: "other", Epochs: orders.Epochs}
	if _, err := NewSlotRecord(topics.Fills, other, 1, env); err == nil {
		t.Error("NewSlotRecord accepted another family's layout")
	}
	r, err := NewSlotRecord(topics.Fills, orders, 35, env)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Key) != "35" || r.Partition != 3 {
		t.Fatalf("slot record key %q partition %d, want 35 and 3", r.Key, r.Partition)
	}
}

// Batches carry the configured codec (snappy by default) through a real
// broker to the consumer, which reads the records whatever the codec.
func TestProducedBatchesCarryTheConfiguredCodec(t *testing.T) {
	e, _, _ := startCatalogBroker(t)
	// The codec ids of the Kafka protocol.
	want := map[string]uint8{"": 2, "snappy": 2, "gzip": 1, "lz4": 3, "zstd": 4, "none": 0}
	for _, name := range []string{"", "snappy", "gzip", "lz4", "zstd", "none"} {
		cl, err := NewClient(Config{Brokers: e.Addrs(), ClientID: t.Name(), Compression: name})
		if err != nil {
			t.Fatal(err)
		}
		// Large and repetitive, so that every codec shrinks the batch
		// (franz-go sends a batch that would not shrink uncompressed).
		payload := map[string]string{"codec": name, "filler": strings.Repeat("block space ", 200)}
		rec, err := NewRecord(topics.AccountEvents, []byte("7"), mustEnvelope(t, topics.TypeBalanceChanged, "codec-"+name, payload))
		if err != nil {
			t.Fatal(err)
		}
		produce(t, cl, rec)
		cl.Close()
	}
	got := consumeAll(t, e, topics.AccountEvents, len(want))
	for _, r := range got {
		e, err := DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(e.ID, "codec-")
		if c := r.Attrs.CompressionType(); c != want[name] {
			t.Errorf("KAFKA_COMPRESSION=%q: batch codec %d, want %d", name, c, want[name])
		}
	}
}

func TestPingFailsWhenTheBrokerIsGone(t *testing.T) {
	t.Parallel() // a broker of its own, killed: beside the tests on the shared one
	e := startOwnApache(t)
	cl := newTestClient(t, e)
	if err := Ping(testContext(t), cl); err != nil {
		t.Fatalf("ping a running broker: %v", err)
	}
	if err := e.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := Ping(ctx, cl); err == nil || !strings.Contains(err.Error(), "ping kafka") {
		t.Fatalf("ping a closed broker: %v", err)
	}
}
