package kafka

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Lag is the consumer metrics of one consumer (docs/operations.md
// "Metrics"): kafka_consumer_records_total and kafka_consumer_lag_records.
// The consumer loop tells it the records it applied (Applied), where a
// partition starts when that is known before its first record (Position)
// and the partitions it gave up (Revoke); at scrape time Lag asks the
// brokers for the last stable offsets of the partitions it holds and
// reports end minus the next offset to apply.
//
// It does not read the group's committed offsets: the settler stores its
// offsets in Postgres, and a reader without a group has none. A nil *Lag
// does nothing, so a consumer built without metrics needs no branch.
type Lag struct {
	group   string
	timeout time.Duration
	ttl     time.Duration
	lag     *prometheus.Desc
	records *prometheus.CounterVec

	// mu guards next, the next offset to apply by topic and partition.
	mu   sync.Mutex
	next map[string]map[int32]int64

	// endsMu serialises scrapes' lookups and guards the admin client and
	// the cached ends.
	endsMu sync.Mutex
	adm    *kadm.Client
	ends   kadm.ListedOffsets
	listed time.Time
	// assigned is the member's assignment listed with ends (FollowGroup).
	assigned map[string]map[int32]bool
	// member, when set (FollowGroup), is the group client whose
	// assignment a scrape asks the group coordinator for.
	member *kgo.Client
}

// Lag lookups: a scrape waits at most lagTimeout for the brokers, and the
// ends listed serve every scrape within lagCache (the dev stack's one
// registry has several consumers, and two Prometheus servers may scrape).
const (
	lagTimeout = 2 * time.Second
	lagCache   = time.Second
)

// NewLag returns the metrics of the consumer of group (for a reader
// without a group, the name it goes by). Give it a client with ListWith
// and register it on the process's registry. It is made before the
// consumer's client so that the client's assignment callbacks can use it.
func NewLag(group string) *Lag {
	labels := prometheus.Labels{"group": group}
	return &Lag{
		group:   group,
		timeout: lagTimeout,
		ttl:     lagCache,
		lag: prometheus.NewDesc("kafka_consumer_lag_records",
			"Records below the partition's last stable offset that this process's consumer has not applied yet.",
			[]string{"topic", "partition"}, labels),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_consumer_records_total", Help: "Records the consumer applied.", ConstLabels: labels,
		}, []string{"topic"}),
		next: map[string]map[int32]int64{},
	}
}

// ListWith makes the scrapes list offsets through cl, usually the
// consumer's own client. Until it is called the lag is not reported.
func (l *Lag) ListWith(cl *kgo.Client) {
	if l == nil {
		return
	}
	l.endsMu.Lock()
	defer l.endsMu.Unlock()
	l.adm = kadm.NewClient(cl)
}

// Hook returns a kgo hook that counts every record the client's polls
// hand out as applied: for a consumer loop that cannot tell the Lag
// itself, and that applies what it polled before it polls again. Give it
// to the client with kgo.WithHooks.
func (l *Lag) Hook() kgo.Hook { return lagHook{l} }

type lagHook struct{ l *Lag }

// OnFetchRecordUnbuffered implements kgo.HookFetchRecordUnbuffered; it
// runs on the polling goroutine for polled records.
func (h lagHook) OnFetchRecordUnbuffered(r *kgo.Record, polled bool) {
	if polled {
		h.l.Applied([]*kgo.Record{r})
	}
}

// FollowGroup makes scrapes ask the group coordinator which partitions
// cl, a member of the group, holds now, and forget the others: for a
// group consumer whose loop cannot call Revoke (its client's revoke
// callbacks belong to other code). The lookup shares the ends' cache.
func (l *Lag) FollowGroup(cl *kgo.Client) {
	if l == nil {
		return
	}
	l.endsMu.Lock()
	defer l.endsMu.Unlock()
	l.member = cl
}

// Applied records that recs were applied (their offsets committed, in
// Kafka or in Postgres): each partition's next offset moves past them.
//
// A consumer of a topic written in transactions (the matcher's
// order-events and fills) should read with kgo.KeepControlRecords, skip
// them with DataRecords and give Applied all it polled: each transaction
// ends in a commit marker that takes an offset, and only a consumer that
// sees the marker knows it has nothing left to apply; otherwise its lag
// never falls below one per partition. Control records advance the
// position and are not counted in kafka_consumer_records_total.
func (l *Lag) Applied(recs []*kgo.Record) {
	if l == nil || len(recs) == 0 {
		return
	}
	counts := map[string]int{}
	l.mu.Lock()
	for _, r := range recs {
		if !r.Attrs.IsControl() {
			counts[r.Topic]++
		}
		l.advance(r.Topic, r.Partition, r.Offset+1)
	}
	l.mu.Unlock()
	for topic, n := range counts {
		l.records.WithLabelValues(topic).Add(float64(n))
	}
}

// DataRecords returns recs without their control records (transaction
// markers, kept by kgo.KeepControlRecords), recs itself when it has none.
func DataRecords(recs []*kgo.Record) []*kgo.Record {
	for i, r := range recs {
		if r.Attrs.IsControl() {
			data := append(make([]*kgo.Record, 0, len(recs)-1), recs[:i]...)
			for _, r := range recs[i+1:] {
				if !r.Attrs.IsControl() {
					data = append(data, r)
				}
			}
			return data
		}
	}
	return recs
}

// advance moves a partition's next offset forward; l.mu is held.
func (l *Lag) advance(topic string, partition int32, next int64) {
	parts := l.next[topic]
	if parts == nil {
		parts = map[int32]int64{}
		l.next[topic] = parts
	}
	if cur, ok := parts[partition]; !ok || next > cur {
		parts[partition] = next
	}
}

// Position sets where a partition the consumer was just given resumes,
// so that its lag shows before its first record is applied.
func (l *Lag) Position(topic string, partition int32, next int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next[topic] == nil {
		l.next[topic] = map[int32]int64{}
	}
	l.next[topic][partition] = next
}

// Revoke forgets partitions the consumer no longer holds: another process
// reports them now.
func (l *Lag) Revoke(parts map[string][]int32) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(l.next[topic], p)
		}
		if len(l.next[topic]) == 0 {
			delete(l.next, topic)
		}
	}
}

// Describe implements prometheus.Collector.
func (l *Lag) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.lag
	l.records.Describe(ch)
}

// Collect implements prometheus.Collector: the records counter, and the
// lag of every partition held whose end the brokers answered.
func (l *Lag) Collect(ch chan<- prometheus.Metric) {
	l.records.Collect(ch)
	held := l.held()
	if len(held) == 0 {
		return
	}
	ends, assigned := l.listEnds(held)
	if assigned != nil {
		held = l.forgetUnassigned(held, assigned)
	}
	for topic, parts := range held {
		for p, next := range parts {
			end, ok := ends.Lookup(topic, p)
			if !ok || end.Err != nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(l.lag, prometheus.GaugeValue, float64(max(end.Offset-next, 0)), topic, strconv.Itoa(int(p)))
		}
	}
}

// held copies the next offsets of the partitions held.
func (l *Lag) held() map[string]map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]map[int32]int64, len(l.next))
	for topic, parts := range l.next {
		out[topic] = make(map[int32]int64, len(parts))
		for p, n := range parts {
			out[topic][p] = n
		}
	}
	return out
}

// forgetUnassigned revokes the partitions of held the member does not
// hold any more and returns the rest.
func (l *Lag) forgetUnassigned(held map[string]map[int32]int64, assigned map[string]map[int32]bool) map[string]map[int32]int64 {
	gone := map[string][]int32{}
	for topic, parts := range held {
		for p := range parts {
			if !assigned[topic][p] {
				gone[topic] = append(gone[topic], p)
				delete(parts, p)
			}
		}
	}
	l.Revoke(gone)
	return held
}

// listEnds returns the last stable offsets of the topics held, listed at
// most lagCache ago, and with FollowGroup the member's assignment; nil
// ends when the brokers did not answer within the timeout, and then the
// scrape shows no lag rather than a stale one.
func (l *Lag) listEnds(held map[string]map[int32]int64) (kadm.ListedOffsets, map[string]map[int32]bool) {
	l.endsMu.Lock()
	defer l.endsMu.Unlock()
	if l.adm == nil {
		return nil, nil
	}
	if l.ends != nil && time.Since(l.listed) < l.ttl && hasTopics(l.ends, held) {
		return l.ends, l.assigned
	}
	names := make([]string, 0, len(held))
	for topic := range held {
		names = append(names, topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	// ListCommittedOffsets lists with read_committed isolation: the last
	// stable offset, the end the consumers (all read_committed) read to.
	ends, err := l.adm.ListCommittedOffsets(ctx, names...)
	if err != nil {
		l.ends = nil
		return nil, nil
	}
	var assigned map[string]map[int32]bool
	if l.member != nil {
		if assigned, err = l.assignment(ctx); err != nil {
			l.ends = nil
			return nil, nil
		}
	}
	l.ends, l.assigned, l.listed = ends, assigned, time.Now()
	return ends, assigned
}

// assignment asks the group coordinator for the partitions l.member
// holds; l.endsMu is held.
func (l *Lag) assignment(ctx context.Context) (map[string]map[int32]bool, error) {
	member, _ := l.member.GroupMetadata()
	groups, err := l.adm.DescribeGroups(ctx, l.group)
	if err != nil {
		return nil, err
	}
	g, ok := groups[l.group]
	if !ok || g.Err != nil {
		return nil, fmt.Errorf("describe group %s: %v", l.group, g.Err)
	}
	out := map[string]map[int32]bool{}
	for _, m := range g.Members {
		if m.MemberID != member {
			continue
		}
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range c.Topics {
			out[t.Topic] = map[int32]bool{}
			for _, p := range t.Partitions {
				out[t.Topic][p] = true
			}
		}
	}
	return out, nil
}

func hasTopics(ends kadm.ListedOffsets, held map[string]map[int32]int64) bool {
	for topic := range held {
		if _, ok := ends[topic]; !ok {
			return false
		}
	}
	return true
}
