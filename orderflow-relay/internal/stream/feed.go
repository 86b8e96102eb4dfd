package stream

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Feed reads originator submissions from the end of the orderflow topics,
// without a consumer group (every instance needs every record for its own
// sockets), and broadcasts each one's decoded transactions.
type Feed struct {
	hub  *Hub
	log  *slog.Logger
	seen *recent
}

// NewFeed returns a feed into hub.
func NewFeed(hub *Hub, log *slog.Logger) *Feed {
	return &Feed{hub: hub, log: log, seen: newRecent(1 << 16)}
}

// ClientOpts are the consumer options of the feed's Kafka client.
func ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(topics.OrderflowTxs, topics.OrderflowBundles),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(100e6), // 100ms long poll; records return as soon as they exist
	}
}

// Run consumes with cl until ctx ends.
func (f *Feed) Run(ctx context.Context, cl *kgo.Client) error {
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			f.log.Warn("searcher feed fetch", "topic", t, "partition", p, "error", err)
		})
		fetches.EachRecord(f.handle)
	}
}

func (f *Feed) handle(r *kgo.Record) {
	typ, _, ok := kafka.RecordType(r)
	if !ok || (typ != topics.TypeOrderflowTx && typ != topics.TypeOrderflowOriginatorBundle) {
		return
	}
	result, key, err := Result(r)
	if err != nil {
		f.log.Warn("searcher feed: bad record", "error", err)
		return
	}
	if !f.seen.add(key) {
		return // published twice (two ingress instances): streamed once
	}
	f.hub.Broadcast(result)
}

// Result returns the notification result of a submission record: the
// JSON array of its decoded transactions, and the submission's hash.
func Result(r *kgo.Record) ([]byte, string, error) {
	e, err := kafka.DecodeRecord(r)
	if err != nil {
		return nil, "", err
	}
	switch e.Type {
	case topics.TypeOrderflowTx:
		var m topics.OrderflowTx
		if err := e.UnmarshalData(&m); err != nil {
			return nil, "", err
		}
		b, err := json.Marshal([]topics.DecodedTx{m.Tx})
		return b, m.Hash, err
	default:
		var m topics.OrderflowOriginatorBundle
		if err := e.UnmarshalData(&m); err != nil {
			return nil, "", err
		}
		txs := make([]topics.DecodedTx, 0, len(m.Txs))
		for _, t := range m.Txs {
			if t.Tx != nil {
				txs = append(txs, *t.Tx)
			}
		}
		b, err := json.Marshal(txs)
		return b, m.BundleHash, err
	}
}

// recent is a bounded set of recently seen keys (two generations).
type recent struct {
	max      int
	cur, old map[string]struct{}
}

func newRecent(max int) *recent {
	return &recent{max: max, cur: make(map[string]struct{}), old: make(map[string]struct{})}
}

func (r *recent) add(k string) bool {
	if _, ok := r.cur[k]; ok {
		return false
	}
	if _, ok := r.old[k]; ok {
		return false
	}
	if len(r.cur) >= r.max {
		r.old, r.cur = r.cur, make(map[string]struct{}, r.max)
	}
	r.cur[k] = struct{}{}
	return true
}
