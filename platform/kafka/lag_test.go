package kafka

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/metricstest"
)

// TestLagIsWhatIsLeftOfEachPartition produces records to two partitions
// of a real broker, applies some, and reads the lag a scrape reports.
func TestLagIsWhatIsLeftOfEachPartition(t *testing.T) {
	e := startApache(t)
	cl := newTestClient(t, e, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "lag-test"
	if _, err := kadm.NewClient(cl).CreateTopic(testContext(t), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range 8 {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v")}) // 4 each
	}
	produced := produce(t, cl, rs...)
	byPart := map[int32][]*kgo.Record{}
	for _, r := range produced {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}

	lag := NewLag("lag-group")
	lag.ListWith(cl)
	reg := prometheus.NewRegistry()
	reg.MustRegister(lag)
	if got := lagOf(t, reg); len(got) != 0 {
		t.Fatalf("lag before any partition is held = %v, want no series", got)
	}

	lag.Position(topic, 1, 0) // held, nothing applied yet
	lag.Applied(byPart[0][:1])
	want := map[string]float64{"0": 3, "1": 4}
	if got := lagOf(t, reg); !maps.Equal(got, want) {
		t.Fatalf("lag after applying 1 of partition 0 = %v, want %v", got, want)
	}

	lag.ttl = 0 // the next scrape lists the ends again
	lag.Applied(byPart[0][1:])
	lag.Applied(byPart[1][:3])
	want = map[string]float64{"0": 0, "1": 1}
	if got := lagOf(t, reg); !maps.Equal(got, want) {
		t.Fatalf("lag = %v, want %v", got, want)
	}
	if n := metricstest.Gather(t, reg)[`kafka_consumer_records_total{group="lag-group",topic="lag-test"}`]; n != 7 {
		t.Fatalf("records applied = %v, want 7", n)
	}

	lag.Applied(byPart[1][3:])
	lag.Revoke(map[string][]int32{topic: {0}})
	want = map[string]float64{"1": 0}
	if got := lagOf(t, reg); !maps.Equal(got, want) {
		t.Fatalf("lag after revoking partition 0 = %v, want %v", got, want)
	}
}

// lagOf returns kafka_consumer_lag_records of lag-group on lag-test by
// partition.
func lagOf(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	prefix := `kafka_consumer_lag_records{group="lag-group",partition="`
	for k, v := range metricstest.Prefixed(metricstest.Gather(t, reg), prefix) {
		p, _, _ := strings.Cut(strings.TrimPrefix(k, prefix), `"`)
		out[p] = v
	}
	return out
}

// TestLagHookFollowsAGroupMember counts what a group consumer's polls
// hand out through the hook, keeps the partitions the group coordinator
// says the member holds, and forgets them once it left the group.
func TestLagHookFollowsAGroupMember(t *testing.T) {
	e := startApache(t)
	cl := newTestClient(t, e, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "lag-test"
	if _, err := kadm.NewClient(cl).CreateTopic(testContext(t), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, &kgo.Record{Topic: topic, Partition: 0}, &kgo.Record{Topic: topic, Partition: 1}, &kgo.Record{Topic: topic, Partition: 1})

	lag := NewLag("lag-group")
	consumer, err := NewClient(Config{Brokers: e.Addrs(), ClientID: t.Name()}, kgo.ConsumerGroup("lag-group"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(lag.Hook()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	lag.ListWith(cl)
	lag.FollowGroup(consumer)
	lag.ttl = 0
	reg := prometheus.NewRegistry()
	reg.MustRegister(lag)
	for n := 0; n < 3; {
		fetches := consumer.PollFetches(testContext(t))
		if err := fetches.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fetches.NumRecords()
	}
	if want, got := map[string]float64{"0": 0, "1": 0}, lagOf(t, reg); !maps.Equal(got, want) {
		t.Fatalf("lag after polling everything = %v, want %v", got, want)
	}
	if n := metricstest.Gather(t, reg)[`kafka_consumer_records_total{group="lag-group",topic="lag-test"}`]; n != 3 {
		t.Fatalf("records counted = %v, want 3", n)
	}
	consumer.Close() // leaves the group
	if got := lagOf(t, reg); len(got) != 0 {
		t.Fatalf("lag after the member left = %v, want no series", got)
	}
}
