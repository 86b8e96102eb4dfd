package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Feed reads originator submissions from the orderflow topics, from where
// they ended when the relay started, without a consumer group (every instance needs every record for its own
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

// ClientOpts are the consumer options of the feed's Kafka client: it
// starts at ends, the end offsets of the orderflow topics' partitions
// listed before the relay serves (StartOffsets). Starting at listed
// offsets rather than "the end" is what makes a submission acknowledged
// after the relay started reach its sockets: "the end" would be resolved
// whenever the client first asks, and a record produced before that
// moment would never be streamed.
func ClientOpts(ends map[string]map[int32]int64) []kgo.Opt {
	start := make(map[string]map[int32]kgo.Offset, len(ends))
	for t, ps := range ends {
		start[t] = make(map[int32]kgo.Offset, len(ps))
		for p, o := range ps {
			start[t][p] = kgo.NewOffset().At(o)
		}
	}
	return []kgo.Opt{
		kgo.ConsumePartitions(start),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(100e6), // 100ms long poll; records return as soon as they exist
	}
}

// StartOffsets lists the end offset of every partition of the topics the
// feed reads.
func StartOffsets(ctx context.Context, adm *kadm.Client) (map[string]map[int32]int64, error) {
	listed, err := adm.ListEndOffsets(ctx, topics.OrderflowTxs, topics.OrderflowBundles)
	if err != nil {
		return nil, fmt.Errorf("feed start offsets: %w", err)
	}
	if err := listed.Error(); err != nil {
		return nil, fmt.Errorf("feed start offsets: %w", err)
	}
	ends := map[string]map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if ends[o.Topic] == nil {
			ends[o.Topic] = map[int32]int64{}
		}
		ends[o.Topic][o.Partition] = o.Offset
	})
	for _, t := range []string{topics.OrderflowTxs, topics.OrderflowBundles} {
		if len(ends[t]) == 0 {
			return nil, fmt.Errorf("feed start offsets: topic %s has no partitions", t)
		}
	}
	return ends, nil
}

// Batching bounds: how many notifications, and how many bytes of
// results, one Broadcast carries.
const (
	maxBatch      = 64
	maxBatchBytes = 256 << 10
)

// Run consumes with cl until ctx ends. What one poll returned is
// broadcast together (up to maxBatch notifications a call): while a
// broadcast runs, submissions pile up in the client, and the next one
// sends them to each socket in one write.
func (f *Feed) Run(ctx context.Context, cl *kgo.Client) error {
	var batch [][]byte
	size := 0
	flush := func() {
		if len(batch) > 0 {
			f.hub.Broadcast(batch...)
		}
		clear(batch)
		batch, size = batch[:0], 0
	}
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(t string, p int32, err error) {
			f.log.Warn("searcher feed fetch", "topic", t, "partition", p, "error", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			result, ok := f.result(r)
			if !ok {
				return
			}
			batch = append(batch, result)
			if size += len(result); len(batch) == maxBatch || size >= maxBatchBytes {
				flush()
			}
		})
		flush()
	}
}

// result returns the notification result of r, or false for a record the
// stream skips: not a submission, malformed, or a submission seen before.
func (f *Feed) result(r *kgo.Record) ([]byte, bool) {
	typ, _, ok := kafka.RecordType(r)
	if !ok || (typ != topics.TypeOrderflowTx && typ != topics.TypeOrderflowOriginatorBundle) {
		return nil, false
	}
	result, key, err := Result(typ, r.Value)
	if err != nil {
		f.log.Warn("searcher feed: bad record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "error", err)
		return nil, false
	}
	if !f.seen.add(key) {
		return nil, false // published twice (two ingress instances): streamed once
	}
	return result, true
}

// Result returns the notification result of a submission record's value:
// the JSON array of its decoded transactions, copied from the record as
// ingress encoded them, and the submission's hash. It reads the value in
// one pass and checks only what the stream relies on.
func Result(typ string, value []byte) ([]byte, string, error) {
	switch typ {
	case topics.TypeOrderflowTx:
		var env struct {
			Data struct {
				Hash string          `json:"hash"`
				Tx   json.RawMessage `json:"tx"`
			} `json:"data"`
		}
		if err := json.Unmarshal(value, &env); err != nil {
			return nil, "", err
		}
		if env.Data.Hash == "" || len(env.Data.Tx) == 0 || env.Data.Tx[0] != '{' {
			return nil, "", errors.New("orderflow.tx without hash or decoded transaction")
		}
		out := make([]byte, 0, len(env.Data.Tx)+2)
		out = append(append(append(out, '['), env.Data.Tx...), ']')
		return out, env.Data.Hash, nil
	case topics.TypeOrderflowOriginatorBundle:
		var env struct {
			Data struct {
				BundleHash string `json:"bundleHash"`
				Txs        []struct {
					Tx json.RawMessage `json:"tx"`
				} `json:"txs"`
			} `json:"data"`
		}
		if err := json.Unmarshal(value, &env); err != nil {
			return nil, "", err
		}
		if env.Data.BundleHash == "" || len(env.Data.Txs) == 0 {
			return nil, "", errors.New("orderflow.originator_bundle without hash or transactions")
		}
		out := []byte{'['}
		for i, t := range env.Data.Txs {
			if len(t.Tx) == 0 || t.Tx[0] != '{' {
				return nil, "", fmt.Errorf("orderflow.originator_bundle: txs[%d] has no decoded transaction", i)
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, t.Tx...)
		}
		return append(out, ']'), env.Data.BundleHash, nil
	}
	return nil, "", fmt.Errorf("%s is not a submission", typ)
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
