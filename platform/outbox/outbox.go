// Package outbox keeps records a service decided in Postgres until Kafka
// has them: the commands ingress accepted, written in the same
// transaction as what they reserve (docs/architecture.md "Reserve at the
// edge"), and the events the
// orderflow relay decides (its forwarder's bundle status changes, its
// chain watcher's inclusions, refunds and payouts). After commit a record
// is published and its row deleted once Kafka acknowledged it. A relay,
// in every service that runs one, republishes rows that stay behind (a
// broker outage, a crash between commit and publish); consumers drop the
// duplicates by envelope id, so a committed record is delivered at least
// once and applied once. The relay leaves alone the rows whose records its
// own process's client still holds: the client keeps them through a broker
// outage and delivers them when the broker is back, so a copy from the
// relay would reach the topic besides them. Copies come only from another
// process (a restarted one, or another instance) relaying rows whose
// records died with the process that first sent them.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// ErrUnacknowledged is in the chain of an error of Send or sendWait when
// Kafka did not acknowledge the records in time or refused them. Its
// Unavailable method makes the HTTP frame (platform/httpx) answer 503: the
// request can be tried again.
var ErrUnacknowledged error = unacknowledged{}

type unacknowledged struct{}

func (unacknowledged) Error() string     { return "kafka did not acknowledge" }
func (unacknowledged) Unavailable() bool { return true }

// Outbox stores commands with their reservations and delivers them.
type Outbox struct {
	pool *pgxpool.Pool
	cl   *kgo.Client
	log  *slog.Logger
	// PublishTimeout bounds how long a caller waits for Kafka's
	// acknowledgement; the relay delivers what it did not get.
	PublishTimeout time.Duration
	// RelayAge is how old an outbox row must be before the relay takes it,
	// so that it does not race the request that wrote it.
	RelayAge time.Duration
	// DeleteEvery is how often Run deletes the rows of acknowledged
	// commands queued by Confirm.
	DeleteEvery time.Duration
	// Layout returns the slot layout of a topic family, for commands of
	// slot-partitioned topics the relay republishes (kafka.Layout by
	// default). A live market never changes partition (docs/architecture.md
	// "One writer per slot"), so
	// the current layout gives the partition the command was first
	// published to.
	Layout func(ctx context.Context, family string) (topics.SlotLayout, error)
	// Metrics, when set, counts the relay's rounds (NewMetrics).
	Metrics *Metrics

	// mu guards confirmed and held.
	mu        sync.Mutex
	confirmed []int64 // acknowledged by Kafka, rows not deleted yet
	// held counts, per outbox row, the sends of its record that have not
	// settled: the record is still with the client, or it was
	// acknowledged and the row is not deleted yet. The relay skips held
	// rows.
	held map[int64]int
	// relayBusy is set while records of a relay round are with the
	// client.
	relayBusy atomic.Bool
}

// Defaults of an outbox: how long a publish waits for Kafka, how old a
// row is before the relay republishes it, and how often the relay looks
// (the interval callers pass to Run).
const (
	DefaultPublishTimeout = 3 * time.Second
	DefaultRelayAge       = 5 * time.Second
	DefaultRelayEvery     = time.Second
)

// New returns an outbox publishing with cl.
func New(pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) *Outbox {
	return &Outbox{
		pool: pool, cl: cl, log: log, held: make(map[int64]int),
		PublishTimeout: DefaultPublishTimeout, RelayAge: DefaultRelayAge, DeleteEvery: 20 * time.Millisecond,
		Layout: func(ctx context.Context, family string) (topics.SlotLayout, error) {
			return kafka.Layout(ctx, cl, family)
		},
	}
}

// Pending is a command written to the outbox, to publish after commit.
type Pending struct {
	ID     int64
	Record *kgo.Record
}

// Enqueue writes one record to the outbox in tx.
func Enqueue(ctx context.Context, tx pgx.Tx, r *kgo.Record) (Pending, error) {
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO outbox (topic, key, value) VALUES ($1, $2, $3) RETURNING outbox_id`,
		r.Topic, r.Key, r.Value).Scan(&id); err != nil {
		return Pending{}, fmt.Errorf("insert outbox row: %w", err)
	}
	return Pending{ID: id, Record: r}, nil
}

// insertAll is the one statement that writes many records to the outbox:
// rows in the order of the arrays, so their identity ids ascend in it.
const insertAll = `
	INSERT INTO outbox (topic, key, value)
	SELECT t, k, v FROM unnest($1::text[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS r(t, k, v, n)
	ORDER BY n RETURNING outbox_id`

// columns are insertAll's arguments for rs.
func columns(rs []*kgo.Record) (topicCol []string, keys, values [][]byte) {
	topicCol, keys, values = make([]string, len(rs)), make([][]byte, len(rs)), make([][]byte, len(rs))
	for i, r := range rs {
		topicCol[i], keys[i], values[i] = r.Topic, r.Key, r.Value
	}
	return topicCol, keys, values
}

// QueueAll queues the one statement that writes many records to the
// outbox in b, for a caller that sends several statements in one round
// trip; *ids receives the row ids (in no particular order) when b runs.
func QueueAll(b *pgx.Batch, rs []*kgo.Record, ids *[]int64) {
	if len(rs) == 0 {
		return
	}
	topicCol, keys, values := columns(rs)
	b.Queue(insertAll, topicCol, keys, values).Query(func(rows pgx.Rows) error {
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("insert outbox rows: %w", err)
		}
		*ids = got
		return nil
	})
}

// EnqueueAll writes rs to the outbox in tx with one statement and returns
// them as Pending, in their order.
func EnqueueAll(ctx context.Context, tx pgx.Tx, rs []*kgo.Record) ([]Pending, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	topicCol, keys, values := columns(rs)
	rows, err := tx.Query(ctx, insertAll, topicCol, keys, values)
	if err != nil {
		return nil, fmt.Errorf("insert outbox rows: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("insert outbox rows: %w", err)
	}
	if len(ids) != len(rs) {
		return nil, fmt.Errorf("insert outbox rows: %d ids for %d records", len(ids), len(rs))
	}
	// The rows were inserted in rs's order, and identity ids ascend with
	// insertion, whatever order RETURNING gives them in.
	slices.Sort(ids)
	ps := make([]Pending, len(rs))
	for i, r := range rs {
		ps[i] = Pending{ID: ids[i], Record: r}
	}
	return ps, nil
}

// Publish sends committed outbox rows and deletes them once Kafka has
// acknowledged. It reports nothing to the caller: the commands are stored,
// so a failure or no acknowledgement within PublishTimeout leaves the rows
// to the relay, which delivers them later. The caller answers the request
// as accepted either way; answering 503 would invite a retry that applies
// the command twice.
func (o *Outbox) Publish(ctx context.Context, ps []Pending) {
	if len(ps) == 0 {
		return
	}
	recs := make([]*kgo.Record, len(ps))
	ids := make([]int64, len(ps))
	for i, p := range ps {
		recs[i], ids[i] = p.Record, p.ID
	}
	if err := o.sendWait(recs, ids, nil); err != nil {
		o.log.Warn("stored commands left to the outbox relay", "commands", len(ps), "error", err)
		return
	}
	defer o.release(ids)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.PublishTimeout)
	defer cancel()
	if err := deleteRows(dctx, o.pool, ids); err != nil {
		// Published; the relay will publish it again and consumers drop
		// the duplicate by command id.
		o.log.Warn("delete published outbox rows", "error", err)
	}
}

// Send publishes records that are not stored in the outbox (commands that
// reserve nothing) and waits for Kafka's acknowledgement, at most
// PublishTimeout; otherwise the error is an unavailable one (503). A
// record not acknowledged in time may still be delivered once the broker
// is back.
func (o *Outbox) Send(recs []*kgo.Record) error { return o.sendWait(recs, nil, nil) }

// sendWait sends records and waits for their acknowledgement, at most
// PublishTimeout. Records acknowledged only after that, and those
// acknowledged beside one Kafka refused, have their rows (ids) queued for
// deletion; the rows of refused records stay. The rows are held from the
// call on, until they are deleted or their records refused; when sendWait
// returns nil the caller deletes them and then releases them. settled,
// when not nil, is called once the client is done with the records,
// however long that takes.
func (o *Outbox) sendWait(recs []*kgo.Record, ids []int64, settled func()) error {
	o.hold(ids)
	answer := make(chan error, 1)
	// The acknowledgement and the timeout race to answer. When the
	// caller is told nil it deletes the rows; otherwise whoever comes
	// second queues them for deletion, so that no acknowledged row stays
	// held. mu orders the two.
	var (
		mu                sync.Mutex
		answered, tookAll bool
	)
	o.send(recs, func(refused []bool, err error) {
		if err != nil {
			took, left := split(ids, refused)
			o.release(left)
			o.Confirm(took)
		} else {
			mu.Lock()
			tookAll = true
			if answered {
				o.Confirm(ids)
			}
			mu.Unlock()
		}
		if settled != nil {
			settled()
		}
	}, func(err error) {
		mu.Lock()
		answered = true
		if tookAll && err != nil {
			o.Confirm(ids)
		}
		mu.Unlock()
		answer <- err
	})
	return <-answer
}

// split parts ids into those whose records Kafka took and those it
// refused.
func split(ids []int64, refused []bool) (took, left []int64) {
	for i, id := range ids {
		if refused[i] {
			left = append(left, id)
		} else {
			took = append(took, id)
		}
	}
	return took, left
}

// PublishAsync sends committed outbox rows without waiting. It calls done
// once: when Kafka acknowledged every record (nil) or refused one (the
// error), or when PublishTimeout passed first (an unavailable error). The
// rows of a fully acknowledged call are queued for deletion, even after
// the timeout; Run deletes them in batches. When Kafka refused some
// records, the rows of the others are queued for deletion too, and the
// refused ones stay for the relay. Records of one partition keep their
// order.
func (o *Outbox) PublishAsync(recs []*kgo.Record, ids []int64, done func(error)) {
	o.hold(ids)
	o.send(recs, func(refused []bool, err error) {
		took, left := split(ids, refused)
		o.release(left)
		o.Confirm(took)
	}, done)
}

// send hands records to Kafka. acked is called once every record was
// acknowledged or refused, however long that takes, with which records
// were refused and the first refusal; answer is called once, with that
// refusal (nil when there was none) or with a timeout error after
// PublishTimeout, whichever comes first. The client is not trusted to
// give up on its own: a broker that vanished can keep records buffered
// until it returns, when they are still delivered. A client whose buffer
// is full refuses more at once instead of blocking.
func (o *Outbox) send(recs []*kgo.Record, acked func(refused []bool, err error), answer func(error)) {
	var once sync.Once
	reply := func(err error) { once.Do(func() { answer(err) }) }
	refused := make([]bool, len(recs))
	if len(recs) == 0 {
		acked(refused, nil)
		reply(nil)
		return
	}
	timer := time.AfterFunc(o.PublishTimeout, func() {
		reply(fmt.Errorf("publish commands: %w: no acknowledgement within %s", ErrUnacknowledged, o.PublishTimeout))
	})
	var (
		mu    sync.Mutex
		left  = len(recs)
		first error
	)
	for i, r := range recs {
		o.cl.TryProduce(context.Background(), r, func(_ *kgo.Record, err error) {
			mu.Lock()
			if err != nil {
				refused[i] = true
				if first == nil {
					first = err
				}
			}
			left--
			last, failed := left == 0, first
			mu.Unlock()
			if !last {
				return
			}
			timer.Stop()
			acked(refused, failed)
			if failed != nil {
				failed = fmt.Errorf("publish commands: %w: %v", ErrUnacknowledged, failed)
			}
			reply(failed)
		})
	}
}

// Confirm queues the rows of acknowledged commands for deletion; once
// deleted, they are released.
func (o *Outbox) Confirm(ids []int64) {
	o.mu.Lock()
	o.confirmed = append(o.confirmed, ids...)
	o.mu.Unlock()
}

// deleteConfirmed deletes the queued rows with one statement. Rows it
// could not delete go back to the queue.
func (o *Outbox) deleteConfirmed(ctx context.Context) error {
	o.mu.Lock()
	ids := o.confirmed
	o.confirmed = nil
	o.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	if err := deleteRows(ctx, o.pool, ids); err != nil {
		o.Confirm(ids)
		return err
	}
	o.release(ids)
	return nil
}

// hold marks the rows ids as sent and not settled, so that the relay
// leaves them alone.
func (o *Outbox) hold(ids []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		o.held[id]++
	}
}

// release ends one hold of each row of ids.
func (o *Outbox) release(ids []int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		switch n := o.held[id]; {
		case n > 1:
			o.held[id] = n - 1
		case n == 1:
			delete(o.held, id)
		}
	}
}

// heldRows returns the rows the relay must leave alone.
func (o *Outbox) heldRows() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]int64, 0, len(o.held))
	for id := range o.held {
		ids = append(ids, id)
	}
	return ids
}

func deleteRows(ctx context.Context, pool *pgxpool.Pool, ids []int64) error {
	if _, err := pool.Exec(ctx, `DELETE FROM outbox WHERE outbox_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("delete outbox rows: %w", err)
	}
	return nil
}

// Run deletes acknowledged rows every DeleteEvery and republishes outbox
// rows older than RelayAge every relayEvery, until ctx ends. It deletes
// what is still queued before it returns.
func (o *Outbox) Run(ctx context.Context, relayEvery time.Duration) {
	relay := time.NewTicker(relayEvery)
	defer relay.Stop()
	del := time.NewTicker(o.DeleteEvery)
	defer del.Stop()
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := o.deleteConfirmed(fctx); err != nil {
			o.log.Warn("outbox: delete acknowledged rows at shutdown", "error", err)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-del.C:
			if err := o.deleteConfirmed(ctx); err != nil && ctx.Err() == nil {
				o.log.Warn("outbox: delete acknowledged rows", "error", err)
			}
		case <-relay.C:
			o.relayAll(ctx)
		}
	}
}

// relayAll republishes old rows in rounds of 500 until a round finds
// fewer.
func (o *Outbox) relayAll(ctx context.Context) {
	for {
		n, err := o.RelayOnce(ctx, 500)
		if err != nil && ctx.Err() == nil {
			o.log.Warn("outbox relay", "error", err)
		}
		if err != nil || n < 500 {
			return
		}
	}
}

// RelayOnce publishes up to limit old outbox rows and deletes them, in one
// transaction that locks them so that several ingress instances share the
// work. It returns how many rows it delivered. Rows whose records this
// Outbox has handed to the client and not settled are left alone. When
// Kafka does not acknowledge within PublishTimeout the transaction rolls
// back, and later rounds do nothing until the client has settled those
// records: a broker outage does not pile up copies of the same rows in
// the client. When Kafka refuses a record (MESSAGE_TOO_LARGE, say) the
// transaction rolls back too, but the rows of the records it took are
// queued for deletion, as a late acknowledgement's are, so that later
// rounds do not publish them again; the refused row stays, and each round
// returns its error.
func (o *Outbox) RelayOnce(ctx context.Context, limit int) (int, error) {
	if o.relayBusy.Load() {
		return 0, nil
	}
	var n int
	var delivered []int64 // acknowledged in time: released once the transaction ends
	defer func() { o.release(delivered) }()
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT outbox_id, topic, key, value FROM outbox
			WHERE created < now() - $1::interval AND outbox_id <> ALL($3::bigint[])
			ORDER BY outbox_id LIMIT $2 FOR UPDATE SKIP LOCKED`, o.RelayAge.String(), limit, o.heldRows())
		if err != nil {
			return err
		}
		var ids []int64
		var recs []*kgo.Record
		var id int64
		var topic string
		var key, value []byte
		layouts := make(map[string]topics.SlotLayout)
		if _, err := pgx.ForEachRow(rows, []any{&id, &topic, &key, &value}, func() error {
			r, err := o.record(ctx, layouts, topic, key, value)
			if err != nil {
				return fmt.Errorf("outbox row %d: %w", id, err)
			}
			ids, recs = append(ids, id), append(recs, r)
			return nil
		}); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		o.relayBusy.Store(true)
		if err := o.sendWait(recs, ids, func() { o.relayBusy.Store(false) }); err != nil {
			return fmt.Errorf("republish: %w", err)
		}
		n, delivered = len(ids), ids
		_, err = tx.Exec(ctx, `DELETE FROM outbox WHERE outbox_id = ANY($1)`, ids)
		return err
	})
	if errors.Is(err, context.Canceled) {
		return n, nil
	}
	o.Metrics.relayed(n, err)
	return n, err
}

// record rebuilds the record of an outbox row. Rows of a slot-partitioned
// topic go to the partition of their slot (the key) in the family's
// layout, read once per relay round.
func (o *Outbox) record(ctx context.Context, layouts map[string]topics.SlotLayout, topic string, key, value []byte) (*kgo.Record, error) {
	e, err := topics.Decode(value)
	if err != nil {
		return nil, err
	}
	t, ok := topics.Lookup(topic)
	if !ok || t.Partitioning != topics.BySlot {
		return kafka.NewRecord(topic, key, e)
	}
	slot, err := topics.ParseSlotKey(key)
	if err != nil {
		return nil, err
	}
	l, ok := layouts[t.Layout]
	if !ok {
		lctx, cancel := context.WithTimeout(ctx, o.PublishTimeout)
		l, err = o.Layout(lctx, t.Layout)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read layout of %s: %w", t.Layout, err)
		}
		layouts[t.Layout] = l
	}
	return kafka.NewSlotRecord(topic, l, slot, e)
}
