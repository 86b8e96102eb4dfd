// Package funding is the money side of ingress: transfers between a
// user's own accounts and withdrawal requests. Each reserves the funds in
// Postgres (locked += x only where available ≥ x) in the same transaction
// as an outbox row holding the command (DESIGN rule 4), then publishes the
// command; a relay republishes what Kafka did not acknowledge.
package funding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Outbox stores commands with their reservations and delivers them.
type Outbox struct {
	pool *pgxpool.Pool
	cl   *kgo.Client
	log  *slog.Logger
	// PublishTimeout bounds how long a request waits for Kafka before it
	// answers 503; the relay delivers the command later.
	PublishTimeout time.Duration
	// RelayAge is how old an outbox row must be before the relay takes it,
	// so that it does not race the request that wrote it.
	RelayAge time.Duration
}

// NewOutbox returns an outbox publishing with cl.
func NewOutbox(pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger) *Outbox {
	return &Outbox{pool: pool, cl: cl, log: log, PublishTimeout: 3 * time.Second, RelayAge: 5 * time.Second}
}

// pending is a command written to the outbox, to publish after commit.
type pending struct {
	id     int64
	record *kgo.Record
}

// enqueue writes the command's record to the outbox in tx.
func enqueue(ctx context.Context, tx pgx.Tx, topic string, key []byte, e topics.Envelope) (pending, error) {
	r, err := kafka.NewRecord(topic, key, e)
	if err != nil {
		return pending{}, err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO outbox (topic, key, value) VALUES ($1, $2, $3) RETURNING outbox_id`,
		topic, key, r.Value).Scan(&id); err != nil {
		return pending{}, fmt.Errorf("insert outbox row: %w", err)
	}
	return pending{id: id, record: r}, nil
}

// publish sends committed outbox rows and deletes them once Kafka has
// acknowledged. A failure leaves the rows for the relay and is reported
// as unavailable (503): the command is accepted and will be delivered.
func (o *Outbox) publish(ctx context.Context, ps []pending) error {
	if len(ps) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.PublishTimeout)
	defer cancel()
	recs := make([]*kgo.Record, len(ps))
	ids := make([]int64, len(ps))
	for i, p := range ps {
		recs[i], ids[i] = p.record, p.id
	}
	if err := o.cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("publish command: %w: %v", httpx.ErrUnavailable, err)
	}
	if _, err := o.pool.Exec(pctx, `DELETE FROM outbox WHERE outbox_id = ANY($1)`, ids); err != nil {
		// Published; the relay will publish it again and consumers drop
		// the duplicate by command id.
		o.log.Warn("delete published outbox rows", "error", err)
	}
	return nil
}

// Run republishes outbox rows older than RelayAge until ctx ends.
func (o *Outbox) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			n, err := o.RelayOnce(ctx, 500)
			if err != nil && ctx.Err() == nil {
				o.log.Warn("outbox relay", "error", err)
			}
			if err != nil || n < 500 {
				break
			}
		}
	}
}

// RelayOnce publishes up to limit old outbox rows and deletes them, in one
// transaction that locks them so that several ingress instances share the
// work. It returns how many rows it delivered.
func (o *Outbox) RelayOnce(ctx context.Context, limit int) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT outbox_id, topic, key, value FROM outbox
			WHERE created < now() - $1::interval ORDER BY outbox_id LIMIT $2 FOR UPDATE SKIP LOCKED`, o.RelayAge.String(), limit)
		if err != nil {
			return err
		}
		var ids []int64
		var recs []*kgo.Record
		var id int64
		var topic string
		var key, value []byte
		if _, err := pgx.ForEachRow(rows, []any{&id, &topic, &key, &value}, func() error {
			e, err := topics.Decode(value)
			if err != nil {
				return fmt.Errorf("outbox row %d: %w", id, err)
			}
			r, err := kafka.NewRecord(topic, key, e)
			if err != nil {
				return err
			}
			ids, recs = append(ids, id), append(recs, r)
			return nil
		}); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		if err := o.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("republish: %w", err)
		}
		n = len(ids)
		_, err = tx.Exec(ctx, `DELETE FROM outbox WHERE outbox_id = ANY($1)`, ids)
		return err
	})
	if errors.Is(err, context.Canceled) {
		return n, nil
	}
	return n, err
}
