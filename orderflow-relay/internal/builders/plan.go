package builders

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"blockspace.exchange/topics"
)

// origin is what a backrun takes from the originator transaction it
// starts with: the signed transaction and the originator's refund terms.
type origin struct {
	raw    string
	refund topics.RefundPolicy
}

// groupKey names a replacement group.
type groupKey struct{ owner, uuid string }

// source is where a record sits in the log.
type source struct {
	topic     string
	partition int32
	offset    int64
}

// job is one thing to tell the builders. A job whose send failed at a
// builder is kept for the retry, with what the earlier sends learned.
type job struct {
	bundleHash  string // "" for a lone transaction
	bundle      Bundle
	cancelUUID  string   // set for the cancellation of a replacement group
	group       groupKey // the replacement group it belongs to, zero when none
	src         source
	sentTo      []string // builders that accepted it
	builderHash string
	// until is the last moment a failed send is tried again; set when the
	// job is first sent.
	until   time.Time
	lastErr string
}

// pending is a stored searcher bundle not forwarded yet: a backrun whose
// originator transaction was not known when it arrived, or a bundle taken
// over from Postgres with its partition.
type pending struct {
	sb       *topics.OrderflowSearcherBundle
	deadline time.Time
	src      source
}

// action is one record of the poll (or a carried pending bundle), in log
// order.
type action struct {
	job     *job                            // a lone transaction or an originator bundle
	sb      *topics.OrderflowSearcherBundle // a searcher bundle or cancellation
	src     source                          // of sb
	carried *pending                        // a bundle stored by an earlier poll
}

func (a action) searcher() *topics.OrderflowSearcherBundle {
	if a.carried != nil {
		return a.carried.sb
	}
	return a.sb
}

func (a action) group() (groupKey, bool) {
	if a.job != nil {
		return a.job.group, a.job.group != groupKey{}
	}
	sb := a.searcher()
	if sb.ReplacementUUID == "" {
		return groupKey{}, false
	}
	return groupKey{lower(sb.Searcher), sb.ReplacementUUID}, true
}

func (a action) source() source {
	if a.job != nil {
		return a.job.src
	}
	if a.carried != nil {
		return a.carried.src
	}
	return a.src
}

// hash is the bundle hash of the action, "" for a lone transaction or a
// cancellation.
func (a action) hash() string {
	if a.job != nil {
		return a.job.bundleHash
	}
	return lower(a.searcher().BundleHash)
}

// txRow is one row of orderflow_txs.
type txRow struct {
	hash, originator, sender, raw, decoded, method string
	refund                                         topics.RefundPolicy
	bundle                                         *string
	received                                       time.Time
}

// plan is what one poll does: the rows to store and, once resolved, the
// jobs for builders. Replacement is decided here: of the actions of a
// replacement group in one poll only the last reaches builders, so the
// builders see a group's versions in log order (polls are forwarded one
// after the other) and never an older version after a newer one or after
// a cancellation.
type plan struct {
	now     time.Time
	txs     []txRow
	bundles []storedBundle // bundle records, stored in log order
	actions []action
	origins map[string]origin // by lower-case hash
	wait    time.Duration

	// Set by finish.
	jobList []*job
	waiting []*pending // backruns still waiting, for the next poll
	expired []*pending // backruns that waited too long: FAILED

	// changed collects, as the batch of queue is read, the status events
	// of the rows its statements changed: bundles replaced, cancelled, or
	// failed waiting for their backrun's transaction.
	changed []statusChange
}

// statusChange is a status event and the log position of the record that
// caused it, which makes its id: a bundle sent again after it was
// replaced or cancelled can be replaced or cancelled again, a new event.
type statusChange struct {
	status topics.OrderflowBundleStatus
	src    source
}

// storedBundle is what a bundle record stores: a bundle of either kind, or
// (cancel) the cancellation of a replacement group.
type storedBundle struct {
	hash, kind, owner, uuid, backrunOf string
	grouped                            bool // uuid names a replacement group of owner
	txHashes                           []string
	received                           time.Time
	src                                source
	request                            Bundle
	cancel                             bool
}

// newPlan starts the plan of a poll at now; a backrun may wait for its
// originator transaction until now+wait.
func newPlan(now time.Time, wait time.Duration) *plan {
	return &plan{now: now, wait: wait, origins: map[string]origin{}}
}

// add takes one decoded record.
func (p *plan) add(rec record) {
	switch {
	case rec.tx != nil:
		m := rec.tx
		p.txs = append(p.txs, txRow{hash: lower(m.Hash), originator: m.Originator, sender: sender(m.Tx), raw: m.Raw,
			decoded: string(m.Tx), method: m.Method, refund: m.Refund, received: rec.received})
		p.origins[lower(m.Hash)] = origin{raw: m.Raw, refund: m.Refund}
		p.actions = append(p.actions, action{job: &job{bundle: Bundle{Txs: []string{m.Raw},
			RefundPercent: m.Refund.Percent, RefundRecipient: m.Refund.Recipient}, src: rec.src}})
	case rec.ob != nil:
		m := rec.ob
		hash := lower(m.BundleHash)
		b := Bundle{BlockNumber: m.Terms.BlockNumber, MinTimestamp: m.Terms.MinTimestamp, MaxTimestamp: m.Terms.MaxTimestamp,
			RevertingTxHashes: m.Terms.RevertingTxHashes, ReplacementUUID: m.ReplacementUUID,
			RefundPercent: m.Refund.Percent, RefundRecipient: m.Refund.Recipient}
		for _, t := range m.Txs {
			p.txs = append(p.txs, txRow{hash: lower(t.Hash), originator: m.Originator, sender: lower(t.Tx.From), raw: t.Raw,
				decoded: encodeDecoded(t.Tx), method: "eth_sendBundle", refund: m.Refund, bundle: &hash, received: rec.received})
			p.origins[lower(t.Hash)] = origin{raw: t.Raw, refund: m.Refund}
			b.Txs = append(b.Txs, t.Raw)
		}
		// A group belongs to an account: the open endpoint (no originator)
		// takes no replacementUuid.
		grouped := m.ReplacementUUID != "" && m.Originator != ""
		if !grouped {
			b.ReplacementUUID = ""
		}
		row := storedBundle{hash: hash, kind: "originator", owner: lower(m.Originator), uuid: m.ReplacementUUID, grouped: grouped,
			txHashes: hashesOf(m.Txs), received: rec.received, src: rec.src, request: b}
		j := &job{bundleHash: hash, bundle: b, src: rec.src}
		if grouped {
			j.group = groupKey{row.owner, m.ReplacementUUID}
		}
		p.bundles = append(p.bundles, row)
		p.actions = append(p.actions, action{job: j})
	case rec.sb != nil:
		m := rec.sb
		p.bundles = append(p.bundles, storedBundle{hash: lower(m.BundleHash), kind: "searcher", owner: lower(m.Searcher),
			uuid: m.ReplacementUUID, grouped: m.ReplacementUUID != "", backrunOf: lower(m.BackrunOf), txHashes: hashesOf(m.Txs),
			received: rec.received, src: rec.src, request: searcherRequest(m), cancel: m.Cancel})
		p.actions = append(p.actions, action{sb: m, src: rec.src})
	}
}

func hashesOf(txs []topics.BundleTx) []string {
	out := make([]string, 0, len(txs))
	for _, t := range txs {
		out = append(out, lower(t.Hash))
	}
	return out
}

// carry puts the bundles earlier polls left waiting, then those taken
// over with a partition, before this poll's records: they are older in
// log order. One this poll carries again itself (a record read again
// after a crash) goes with the record.
func (p *plan) carry(waiting []*pending, adopted []action) {
	if len(waiting)+len(adopted) == 0 {
		return
	}
	fresh := map[string]bool{}
	for _, a := range p.actions {
		fresh[a.hash()] = true
	}
	carried := make([]action, 0, len(waiting)+len(adopted)+len(p.actions))
	for _, w := range waiting {
		carried = append(carried, action{carried: w})
	}
	carried = append(carried, adopted...)
	kept := carried[:0]
	for _, a := range carried {
		if h := a.hash(); h == "" || !fresh[h] {
			kept = append(kept, a)
		}
	}
	p.actions = append(kept, p.actions...)
}

// missing lists the originator transactions of backruns the poll does not
// carry itself.
func (p *plan) missing() []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range p.actions {
		if a.job != nil {
			continue
		}
		sb := a.searcher()
		if sb.BackrunOf == "" {
			continue
		}
		h := lower(sb.BackrunOf)
		if _, ok := p.origins[h]; !ok && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// finish turns the actions into jobs once backruns are resolved. The last
// action of each replacement group wins; a group whose latest version is
// a backrun still waiting gets a cancellation, so that builders drop the
// version they hold.
func (p *plan) finish() {
	last := map[groupKey]int{}
	for i, a := range p.actions {
		if g, ok := a.group(); ok {
			last[g] = i
		}
	}
	for i, a := range p.actions {
		g, grouped := a.group()
		if grouped && last[g] != i {
			continue // superseded in log order
		}
		if a.job != nil {
			p.jobList = append(p.jobList, a.job)
			continue
		}
		sb, src := a.searcher(), a.source()
		if sb.Cancel {
			p.jobList = append(p.jobList, &job{cancelUUID: sb.ReplacementUUID, group: g, src: src})
			continue
		}
		j, ok := p.searcherJob(sb)
		if ok {
			j.group, j.src = g, src
			p.jobList = append(p.jobList, j)
			continue
		}
		w := a.carried
		if w == nil {
			w = &pending{sb: sb, deadline: p.now.Add(p.wait), src: src}
		}
		if !p.now.Before(w.deadline) {
			p.expired = append(p.expired, w)
			continue
		}
		p.waiting = append(p.waiting, w)
		if grouped && a.carried == nil {
			// Once, when it starts waiting.
			p.jobList = append(p.jobList, &job{cancelUUID: sb.ReplacementUUID, group: g, src: src})
		}
	}
}

// searcherJob builds the builder bundle of sb; ok is false while its
// backrun's originator transaction is unknown.
func (p *plan) searcherJob(sb *topics.OrderflowSearcherBundle) (*job, bool) {
	b := Bundle{BlockNumber: sb.Terms.BlockNumber, MinTimestamp: sb.Terms.MinTimestamp, MaxTimestamp: sb.Terms.MaxTimestamp,
		RevertingTxHashes: sb.Terms.RevertingTxHashes, ReplacementUUID: sb.ReplacementUUID}
	for i, t := range sb.Txs {
		if i == 0 && sb.BackrunOf != "" {
			o, ok := p.origins[lower(sb.BackrunOf)]
			if !ok {
				return nil, false
			}
			b.Txs = append(b.Txs, o.raw)
			b.RefundPercent, b.RefundRecipient = o.refund.Percent, o.refund.Recipient
			continue
		}
		b.Txs = append(b.Txs, t.Raw)
	}
	return &job{bundleHash: lower(sb.BundleHash), bundle: b}, true
}

// jobs returns what finish decided.
func (p *plan) jobs() []*job { return p.jobList }

// queue adds the poll's statements to b.
func (p *plan) queue(b *pgx.Batch) {
	p.queueTxs(b)
	for _, r := range p.bundles {
		r.queue(b, p.collect)
	}
	for _, w := range p.expired {
		reason := "backrun of " + lower(w.sb.BackrunOf) + ", a transaction this relay never received"
		b.Queue(`UPDATE orderflow_bundles SET status = 'FAILED', reason = $2, updated_at = now()
			WHERE bundle_hash = $1 AND status = 'RECEIVED' RETURNING bundle_hash`, lower(w.sb.BundleHash), reason).
			Query(p.collect(topics.BundleFailed, reason, w.src))
	}
}

// collect returns the reader of a status UPDATE's RETURNING bundle_hash:
// each row it changed becomes an event.
func (p *plan) collect(status, reason string, src source) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var hash string
		_, err := pgx.ForEachRow(rows, []any{&hash}, func() error {
			p.changed = append(p.changed, statusChange{
				status: topics.OrderflowBundleStatus{BundleHash: hash, Status: status, Reason: reason, At: p.now.UnixMilli()},
				src:    src,
			})
			return nil
		})
		return err
	}
}

// queueTxs inserts every transaction of the poll with one statement.
func (p *plan) queueTxs(b *pgx.Batch) {
	if len(p.txs) == 0 {
		return
	}
	n := len(p.txs)
	hash, originator, snd, raw, decoded, method, recipient := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	percent, bundle, received := make([]int32, n), make([]*string, n), make([]time.Time, n)
	for i, t := range p.txs {
		hash[i], originator[i], snd[i], raw[i], decoded[i], method[i] = t.hash, t.originator, t.sender, t.raw, t.decoded, t.method
		recipient[i], percent[i], bundle[i], received[i] = t.refund.Recipient, int32(t.refund.Percent), t.bundle, t.received
	}
	b.Queue(`INSERT INTO orderflow_txs (hash, originator, sender, raw, decoded, method, refund_recipient, refund_percent, bundle_hash, received_at)
		SELECT h, o, s, r, d::jsonb, m, rr, rp, bh, ra
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::timestamptz[])
			AS t(h, o, s, r, d, m, rr, rp, bh, ra)
		ON CONFLICT (hash) DO NOTHING`,
		hash, originator, snd, raw, decoded, method, recipient, percent, bundle, received)
}

// queue stores the record. Versions of a replacement group share a
// partition (originator and searcher versions of one account alike), so
// this record is newer than every version stored: the others become
// REPLACED, and a version sent again after it was replaced or cancelled
// is the group's live version again.
func (r storedBundle) queue(b *pgx.Batch, collect func(status, reason string, src source) func(pgx.Rows) error) {
	if r.cancel {
		b.Queue(`UPDATE orderflow_bundles SET status = 'CANCELLED', updated_at = now()
			WHERE owner = $1 AND replacement_uuid = $2 AND status IN ('RECEIVED', 'FORWARDED') RETURNING bundle_hash`, r.owner, r.uuid).
			Query(collect(topics.BundleCancelled, "", r.src))
		return
	}
	if r.grouped {
		b.Queue(`UPDATE orderflow_bundles SET status = 'REPLACED', updated_at = now()
			WHERE owner = $1 AND replacement_uuid = $2 AND bundle_hash <> $3 AND status IN ('RECEIVED', 'FORWARDED')
			RETURNING bundle_hash`, r.owner, r.uuid, r.hash).
			Query(collect(topics.BundleReplaced, "replaced by "+r.hash, r.src))
	}
	b.Queue(`INSERT INTO orderflow_bundles (bundle_hash, kind, owner, replacement_uuid, backrun_of, tx_hashes, status, received_at,
			source_partition, source_offset, request)
		VALUES ($1, $2, $3, $4, $5, $6, 'RECEIVED', $7, $8, $9, $10)
		ON CONFLICT (bundle_hash) DO UPDATE SET status = 'RECEIVED', builder_bundle_hash = '', builders = '{}', updated_at = now(),
			source_partition = EXCLUDED.source_partition, source_offset = EXCLUDED.source_offset, request = EXCLUDED.request
		WHERE $11 AND orderflow_bundles.kind = EXCLUDED.kind AND orderflow_bundles.owner = EXCLUDED.owner
			AND orderflow_bundles.replacement_uuid = EXCLUDED.replacement_uuid
			AND orderflow_bundles.status IN ('REPLACED', 'CANCELLED')`,
		r.hash, r.kind, r.owner, r.uuid, r.backrunOf, r.txHashes, r.received, r.src.partition, r.src.offset, requestJSON(r.request), r.grouped)
}

// searcherRequest is the builder request of a searcher bundle as stored:
// a backrun's leading element stays the originator transaction's hash
// until the transaction is known.
func searcherRequest(m *topics.OrderflowSearcherBundle) Bundle {
	b := Bundle{BlockNumber: m.Terms.BlockNumber, MinTimestamp: m.Terms.MinTimestamp, MaxTimestamp: m.Terms.MaxTimestamp,
		RevertingTxHashes: m.Terms.RevertingTxHashes, ReplacementUUID: m.ReplacementUUID}
	for i, t := range m.Txs {
		if i == 0 && m.BackrunOf != "" {
			b.Txs = append(b.Txs, lower(t.Hash))
			continue
		}
		b.Txs = append(b.Txs, t.Raw)
	}
	return b
}

// requestJSON is the stored form of a builder request.
func requestJSON(b Bundle) string {
	out, err := json.Marshal(b)
	if err != nil {
		return "{}" // a Bundle of strings and integers always encodes
	}
	return string(out)
}
