package builders

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// Backoff of the retries at one builder: the first after retryFirst, each
// next one twice as late, at most retryMax apart.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 4 * time.Second
)

// retry is one job for one builder: a send, and once it failed, the
// next attempt.
type retry struct {
	job     *job
	builder int       // index in Forwarder.builders
	attempt int       // failed attempts so far
	due     time.Time // when to try again
	// rejected: the last attempt was answered with an error (rather than
	// not answered).
	rejected bool
}

// givenUp is the outcome of a send that failed with no retry left.
func (r *retry) givenUp() string {
	if r.rejected {
		return forwardRejected
	}
	return forwardFailed
}

func backoff(attempt int) time.Duration {
	return min(retryFirst<<min(attempt-1, 8), retryMax)
}

// takeDue drops the retries that this pass's jobs supersede (a later
// action of the same replacement group, or the same bundle again, which
// every builder gets anyway) and returns those due at now.
func (f *Forwarder) takeDue(now time.Time, jobs []*job) []*retry {
	if len(f.retries) == 0 {
		return nil
	}
	groups, hashes := map[groupKey]bool{}, map[string]bool{}
	for _, j := range jobs {
		if j.group != (groupKey{}) {
			groups[j.group] = true
		}
		if j.bundleHash != "" {
			hashes[j.bundleHash] = true
		}
	}
	var due []*retry
	kept := f.retries[:0]
	for _, r := range f.retries {
		switch {
		case r.job.group != (groupKey{}) && groups[r.job.group], r.job.bundleHash != "" && hashes[r.job.bundleHash]:
		case !r.due.After(now):
			due = append(due, r)
		default:
			kept = append(kept, r)
		}
	}
	clear(f.retries[len(kept):])
	f.retries = kept
	return due
}

// forward sends the jobs to every builder and the due retries to theirs:
// cancellations one by one, bundles in batches of cfg.Batch, at most
// cfg.Parallel requests at once. A failed send is tried again within the
// job's window; then it records which bundles reached a builder, and
// which none will.
func (f *Forwarder) forward(ctx context.Context, jobs []*job, due []*retry) {
	if len(f.builders) == 0 || len(jobs)+len(due) == 0 {
		return
	}
	perBuilder := make([][]*retry, len(f.builders))
	for _, j := range jobs {
		j.until = f.retryUntil(j)
		for i := range f.builders {
			perBuilder[i] = append(perBuilder[i], &retry{job: j, builder: i})
		}
	}
	for _, r := range due {
		perBuilder[r.builder] = append(perBuilder[r.builder], r)
	}
	had := map[*job]int{} // builders each job had before this pass
	for _, rs := range perBuilder {
		for _, r := range rs {
			had[r.job] = len(r.job.sentTo)
		}
	}
	var mu sync.Mutex // guards the jobs' sentTo and lastErr, and failed
	var failed []*retry
	done := func(r *retry, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			f.log.Warn("send to builder", "builder", f.builders[r.builder].URL, "attempt", r.attempt+1, "error", err)
			r.job.lastErr = err.Error()
			r.rejected = isRejection(err)
			failed = append(failed, r)
			return
		}
		f.cfg.Metrics.forwarded(forwardAccepted)
		r.job.sentTo = append(r.job.sentTo, f.builders[r.builder].URL)
	}
	sem := make(chan struct{}, f.cfg.Parallel)
	var wg sync.WaitGroup
	run := func(fn func()) {
		sem <- struct{}{}
		wg.Go(func() { defer func() { <-sem }(); fn() })
	}
	for i, rs := range perBuilder {
		b := f.builders[i]
		var sends []*retry
		for _, r := range rs {
			if r.job.cancelUUID == "" {
				sends = append(sends, r)
				continue
			}
			run(func() { done(r, b.CancelBundle(ctx, r.job.cancelUUID)) })
		}
		for start := 0; start < len(sends); start += f.cfg.Batch {
			chunk := sends[start:min(start+f.cfg.Batch, len(sends))]
			bundles := make([]Bundle, len(chunk))
			for k, r := range chunk {
				bundles[k] = r.job.bundle
			}
			run(func() {
				for k, err := range b.SendBundles(ctx, bundles) {
					done(chunk[k], err)
				}
			})
		}
	}
	wg.Wait()
	f.schedule(failed)
	f.record(ctx, had)
}

// retryUntil is the end of j's window of retries, fixed when it is first
// sent: cfg.RetryFor, and no later than its maxTimestamp.
func (f *Forwarder) retryUntil(j *job) time.Time {
	if !j.until.IsZero() {
		return j.until
	}
	until := f.now().Add(f.cfg.RetryFor)
	if m := j.bundle.MaxTimestamp; m > 0 && time.Unix(m, 0).Before(until) {
		until = time.Unix(m, 0)
	}
	return until
}

// schedule keeps the failed sends whose window is still open for a later
// pass. The last attempt is at the window's end.
func (f *Forwarder) schedule(failed []*retry) {
	now := f.now()
	for _, r := range failed {
		if !now.Before(r.job.until) {
			f.cfg.Metrics.forwarded(r.givenUp())
			continue
		}
		f.cfg.Metrics.forwarded(forwardRetried)
		r.attempt++
		r.due = now.Add(backoff(r.attempt))
		if r.due.After(r.job.until) {
			r.due = r.job.until
		}
		f.retries = append(f.retries, r)
	}
}

// unforwardedReason is the reason of a bundle no builder took. It names
// no builder nor error: tracking reads are public (the log has both).
func (f *Forwarder) unforwardedReason() string {
	return "no builder accepted it within " + f.cfg.RetryFor.String()
}

// record stores what this pass's sends changed and the status events it
// causes in one transaction, and publishes the events once it has
// committed: a bundle that reached its first builder is FORWARDED, one
// that reached more gets them added (no event), and one that no builder
// took and none will try again is FAILED. A bundle replaced or cancelled
// meanwhile keeps that state, with no event. had is how many builders
// each job sent had before.
func (f *Forwarder) record(ctx context.Context, had map[*job]int) {
	retrying := map[*job]bool{}
	for _, r := range f.retries {
		retrying[r.job] = true
	}
	var updates []update
	b := &pgx.Batch{}
	for j, n := range had {
		switch {
		case j.bundleHash == "" || len(j.sentTo) == n && (n > 0 || retrying[j]):
		case n == 0 && len(j.sentTo) > 0:
			j.builderHash = BuilderHash(j.bundle.Txs)
			b.Queue(`UPDATE orderflow_bundles SET status = 'FORWARDED', builder_bundle_hash = $2, builders = $3, updated_at = now()
				WHERE bundle_hash = $1 AND status = 'RECEIVED'`, j.bundleHash, j.builderHash, j.sentTo)
			updates = append(updates, update{j, topics.BundleForwarded})
		case len(j.sentTo) > n:
			b.Queue(`UPDATE orderflow_bundles SET builders = $2, updated_at = now() WHERE bundle_hash = $1 AND status = 'FORWARDED'`,
				j.bundleHash, j.sentTo)
			updates = append(updates, update{j, ""})
		default: // no builder, no retry left
			b.Queue(`UPDATE orderflow_bundles SET status = 'FAILED', reason = $2, updated_at = now()
				WHERE bundle_hash = $1 AND status = 'RECEIVED'`, j.bundleHash, f.unforwardedReason())
			updates = append(updates, update{j, topics.BundleFailed})
		}
	}
	if len(updates) == 0 {
		return
	}
	var kept []outbox.Pending
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		kept, err = f.apply(ctx, tx, b, updates)
		return err
	})
	if err != nil {
		f.log.Warn("record bundle forwarding", "error", err)
		return
	}
	if f.out != nil {
		f.out.Publish(ctx, kept)
	}
}

// update is one status UPDATE of record and the status its event
// reports when it changed the row; "" reports nothing.
type update struct {
	j      *job
	status string
}

// apply runs the UPDATEs of b in tx in one round trip and writes the
// event of each that changed its row to the outbox. A forwarder without
// an outbox keeps no event.
func (f *Forwarder) apply(ctx context.Context, tx pgx.Tx, b *pgx.Batch, updates []update) ([]outbox.Pending, error) {
	br := tx.SendBatch(ctx, b)
	var changed []statusChange
	for _, u := range updates {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("update bundle %s: %w", u.j.bundleHash, err)
		}
		if tag.RowsAffected() > 0 && u.status != "" {
			changed = append(changed, statusChange{status: f.statusOf(u), src: u.j.src})
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("update bundles: %w", err)
	}
	return f.keep(ctx, tx, changed)
}

// keep writes status events to the outbox in tx. Each names in its id the
// log position of the orderflow-bundles record that caused it: the
// version forwarded or failed, or the one that
// replaced or cancelled it. A replay decides the same event under the
// same id, and a bundle sent again after it was replaced or cancelled
// reaches its statuses again under new ids. A forwarder without an outbox
// keeps none.
func (f *Forwarder) keep(ctx context.Context, tx pgx.Tx, changes []statusChange) ([]outbox.Pending, error) {
	if f.out == nil || len(changes) == 0 {
		return nil, nil
	}
	recs := make([]*kgo.Record, len(changes))
	for i, c := range changes {
		st := c.status
		id := fmt.Sprintf("bs-%s-%s-%d:%d", st.BundleHash, st.Status, c.src.partition, c.src.offset)
		r, err := statusRecord(id, st)
		if err != nil {
			return nil, fmt.Errorf("status event of bundle %s: %w", st.BundleHash, err)
		}
		recs[i] = r
	}
	return outbox.EnqueueAll(ctx, tx, recs)
}

// statusOf is the event of an update that changed its row.
func (f *Forwarder) statusOf(u update) topics.OrderflowBundleStatus {
	st := topics.OrderflowBundleStatus{BundleHash: u.j.bundleHash, Status: u.status, At: f.now().UnixMilli()}
	if u.status == topics.BundleForwarded {
		st.BuilderBundleHash, st.Builders = u.j.builderHash, u.j.sentTo
	} else {
		st.Reason = f.unforwardedReason()
	}
	return st
}
