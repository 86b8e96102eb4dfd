package builders

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// A bundle's offset is committed with its poll, also when it still waits
// for its backrun's transaction or for a builder to take it. Postgres
// holds it meanwhile (RECEIVED, with its partition and builder request),
// and whoever is assigned its partition of orderflow-bundles takes it
// over: the forwarder at start, another relay after a rebalance. The
// member that loses the partition forgets it first; rebalances happen only
// between Run's passes (BlockRebalanceOnPoll), so two members never both
// hold it.

// change is a rebalance's news for Handle: partitions of orderflow-bundles
// assigned to this member, or revoked or lost.
type change struct {
	assigned   bool
	partitions []int32
}

// adoptHorizon bounds how old a bundle taken over may be: an older one is
// past any block it could still make, and the chain watcher fails it.
const adoptHorizon = 10 * time.Minute

// rebalanced returns the group callback that hands partitions to Handle
// and wakes Run's poll.
func (f *Forwarder) rebalanced(assigned bool) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		ps := parts[topics.OrderflowBundles]
		if len(ps) == 0 {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.changes = append(f.changes, change{assigned: assigned, partitions: slices.Clone(ps)})
		if f.wake != nil {
			f.wake()
		}
	}
}

// applyChanges applies the rebalances in the order they happened. A
// change that fails stays for the next call, with those after it.
func (f *Forwarder) applyChanges(ctx context.Context) error {
	for {
		f.mu.Lock()
		if len(f.changes) == 0 {
			f.mu.Unlock()
			return nil
		}
		c := f.changes[0]
		f.mu.Unlock()
		if c.assigned {
			if err := f.adopt(ctx, c.partitions); err != nil {
				return err
			}
		} else {
			f.release(c.partitions)
		}
		f.mu.Lock()
		f.changes = f.changes[1:]
		f.mu.Unlock()
	}
}

// release forgets what came from partitions this member no longer owns
// and their next owner takes over: waiting backruns, and retries of
// bundles no builder took yet or of a replacement group (whose next
// action the next owner sends). Retries of other bundles some builder
// already took, and of lone transactions, stay: no one else has them.
func (f *Forwarder) release(parts []int32) {
	gone := func(s source) bool { return s.topic == topics.OrderflowBundles && slices.Contains(parts, s.partition) }
	f.waiting = slices.DeleteFunc(f.waiting, func(w *pending) bool { return gone(w.src) })
	f.adopted = slices.DeleteFunc(f.adopted, func(a action) bool { return gone(a.source()) })
	f.retries = slices.DeleteFunc(f.retries, func(r *retry) bool {
		return gone(r.job.src) && (len(r.job.sentTo) == 0 || r.job.group != groupKey{})
	})
}

// unforwarded is a stored bundle no builder took yet.
type unforwarded struct {
	hash, kind, owner, uuid, backrunOf string
	txHashes                           []string
	request                            Bundle
	partition                          int32
	offset                             int64
}

// adopt loads the bundles of partitions that no builder took yet, in log
// order, for the next pass: backruns wait for their transaction afresh,
// the others are sent with a fresh window of retries.
func (f *Forwarder) adopt(ctx context.Context, parts []int32) error {
	rows, err := f.pool.Query(ctx, `SELECT bundle_hash, kind, owner, replacement_uuid, backrun_of, tx_hashes, request, source_partition, source_offset
		FROM orderflow_bundles
		WHERE status = 'RECEIVED' AND source_partition = ANY($1) AND request IS NOT NULL AND received_at > $2
		ORDER BY source_partition, source_offset`, parts, f.now().Add(-adoptHorizon))
	if err != nil {
		return fmt.Errorf("take over bundles: %w", err)
	}
	deadline := f.now().Add(f.cfg.BackrunWait)
	var u unforwarded
	var adopted []action
	_, err = pgx.ForEachRow(rows, []any{&u.hash, &u.kind, &u.owner, &u.uuid, &u.backrunOf, &u.txHashes, &u.request, &u.partition, &u.offset}, func() error {
		if a, ok := u.action(deadline); ok {
			adopted = append(adopted, a)
		}
		u = unforwarded{}
		return nil
	})
	if err != nil {
		return fmt.Errorf("take over bundles: %w", err)
	}
	if len(adopted) > 0 {
		f.log.Info("took over bundles not forwarded yet", "partitions", parts, "bundles", len(adopted))
	}
	f.adopted = append(f.adopted, adopted...)
	return nil
}

// action rebuilds the action of a stored bundle: an originator bundle's
// job, or a searcher bundle as if it had waited, until deadline if it is
// a backrun whose transaction is still unknown. False for a row whose
// request does not match its transactions.
func (u unforwarded) action(deadline time.Time) (action, bool) {
	src := source{topic: topics.OrderflowBundles, partition: u.partition, offset: u.offset}
	if len(u.request.Txs) != len(u.txHashes) || len(u.txHashes) == 0 {
		return action{}, false
	}
	if u.kind == "originator" {
		j := &job{bundleHash: u.hash, bundle: u.request, src: src}
		if u.uuid != "" && u.owner != "" {
			j.group = groupKey{u.owner, u.uuid}
		}
		return action{job: j}, true
	}
	r := u.request
	sb := &topics.OrderflowSearcherBundle{BundleHash: u.hash, Searcher: u.owner, ReplacementUUID: u.uuid, BackrunOf: u.backrunOf,
		Terms: topics.BundleTerms{BlockNumber: r.BlockNumber, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp,
			RevertingTxHashes: r.RevertingTxHashes}}
	for i, h := range u.txHashes {
		t := topics.BundleTx{Hash: h}
		if i > 0 || u.backrunOf == "" {
			t.Raw = r.Txs[i]
		}
		sb.Txs = append(sb.Txs, t)
	}
	return action{carried: &pending{sb: sb, deadline: deadline, src: src}}, true
}
