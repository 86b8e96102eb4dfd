package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Records returns the Kafka records of the batch: postings first, then
// balances, then positions, each keyed by its owner's user id.
func (b *Batch) Records() ([]*kgo.Record, error) {
	out := make([]*kgo.Record, 0, len(b.Postings)+len(b.Balances)+len(b.Positions))
	add := func(user int64, at time.Time, payload any) error {
		e, err := topics.AccountEnvelope(at, payload)
		if err != nil {
			return err
		}
		r, err := kafka.NewRecord(topics.AccountEvents, topics.UserKey(user), e)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	}
	for _, p := range b.Postings {
		if err := add(p.UserID, time.UnixMilli(p.CreateDate), p); err != nil {
			return nil, err
		}
	}
	for _, bal := range b.Balances {
		if err := add(bal.UserID, b.At, bal); err != nil {
			return nil, err
		}
	}
	for _, p := range b.Positions {
		if err := add(p.UserID, b.At, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Publisher sends committed batches' feeds to account-events.
type Publisher struct {
	pool  *pgxpool.Pool
	cl    *kgo.Client
	log   *slog.Logger
	queue chan *Batch
	// RelayAge is how old a row of account_feed must be before the relay
	// sends it (10 s): younger rows are on their way from the settler that
	// wrote them. RelayEvery is how often the relay looks (2 s).
	RelayAge, RelayEvery time.Duration

	published, relayed, deferred atomic.Int64
}

// NewPublisher returns a publisher producing with cl. queue is how many
// committed batches may wait for Kafka before Publish blocks.
func NewPublisher(pool *pgxpool.Pool, cl *kgo.Client, log *slog.Logger, queue int) *Publisher {
	return &Publisher{pool: pool, cl: cl, log: log, queue: make(chan *Batch, queue), RelayAge: 10 * time.Second, RelayEvery: 2 * time.Second}
}

// Publish hands a committed batch's feed to Run. It never waits: when the
// queue is full (Kafka slower than the settler) the batch stays in
// account_feed and the relay sends it, so a slow feed never holds up
// settlement.
func (p *Publisher) Publish(b *Batch) {
	if b == nil {
		return
	}
	select {
	case p.queue <- b:
	default:
		p.deferred.Add(1)
	}
}

// Counts are the records sent since start by the queue and by the relay,
// and the batches left to the relay because the queue was full.
func (p *Publisher) Counts() (published, relayed, deferred int64) {
	return p.published.Load(), p.relayed.Load(), p.deferred.Load()
}

// shutdownGrace bounds how long Run keeps sending queued batches after ctx
// ended.
const shutdownGrace = 3 * time.Second

// Run sends queued batches, deletes their rows once Kafka acknowledged
// them, and relays rows a crash left behind, until ctx ends; then it sends
// what is still queued for up to 3 s. A batch that fails to send stays in
// account_feed for the relay.
func (p *Publisher) Run(ctx context.Context) error {
	tick := time.NewTicker(p.RelayEvery)
	defer tick.Stop()
	var sent []int64
	for {
		select {
		case <-ctx.Done():
			p.drain(context.WithoutCancel(ctx), sent)
			return nil
		case b := <-p.queue:
			if err := p.send(ctx, b); err != nil {
				if ctx.Err() == nil {
					p.log.Warn("publish account feed; the relay sends it later", "version", b.Version, "error", err)
				}
				continue
			}
			if sent = append(sent, b.Version); len(p.queue) == 0 || len(sent) >= 256 {
				p.forget(ctx, sent)
				sent = sent[:0]
			}
		case <-tick.C:
			for {
				n, err := p.RelayOnce(ctx, 100)
				if err != nil && ctx.Err() == nil {
					p.log.Warn("relay account feed", "error", err)
				}
				if err != nil || n < 100 {
					break
				}
			}
		}
	}
}

func (p *Publisher) drain(ctx context.Context, sent []int64) {
	ctx, cancel := context.WithTimeout(ctx, shutdownGrace)
	defer cancel()
	for {
		select {
		case b := <-p.queue:
			if p.send(ctx, b) == nil {
				sent = append(sent, b.Version)
			}
		default:
			p.forget(ctx, sent)
			return
		}
	}
}

func (p *Publisher) send(ctx context.Context, b *Batch) error {
	if b.Postings == nil && len(b.entries) > 0 {
		var err error
		if b.Postings, err = readPostings(ctx, p.pool, b.entries); err != nil {
			return err
		}
	}
	recs, err := b.Records()
	if err != nil {
		return err
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d records: %w", len(recs), err)
	}
	p.published.Add(int64(len(recs)))
	return nil
}

// forget deletes the rows of sent batches. A failed delete only means the
// relay sends them again.
func (p *Publisher) forget(ctx context.Context, versions []int64) {
	if len(versions) == 0 {
		return
	}
	if _, err := p.pool.Exec(ctx, `DELETE FROM account_feed WHERE version = ANY($1)`, versions); err != nil && ctx.Err() == nil {
		p.log.Warn("delete published account feed rows", "error", err)
	}
}

// RelayOnce sends up to limit rows of account_feed older than RelayAge,
// oldest first, and deletes them, in one transaction that locks them so
// that several settlers share the work. It returns how many rows it sent.
func (p *Publisher) RelayOnce(ctx context.Context, limit int) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		batches, err := p.stale(ctx, tx, limit)
		if err != nil || len(batches) == 0 {
			return err
		}
		var recs []*kgo.Record
		versions := make([]int64, len(batches))
		for i, b := range batches {
			r, err := b.Records()
			if err != nil {
				return err
			}
			recs, versions[i] = append(recs, r...), b.Version
		}
		if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce %d records: %w", len(recs), err)
		}
		p.relayed.Add(int64(len(recs)))
		n = len(batches)
		_, err = tx.Exec(ctx, `DELETE FROM account_feed WHERE version = ANY($1)`, versions)
		return err
	})
	if errors.Is(err, context.Canceled) {
		return n, nil
	}
	return n, err
}

// stale reads and locks the old rows of account_feed and rebuilds their
// batches: the stored balances and positions, and the postings of the
// stored entries.
func (p *Publisher) stale(ctx context.Context, tx pgx.Tx, limit int) ([]*Batch, error) {
	rows, err := tx.Query(ctx, `
		SELECT version, entry_ids, balances, positions, created FROM account_feed
		WHERE created < now() - $1::interval ORDER BY version LIMIT $2 FOR UPDATE SKIP LOCKED`, p.RelayAge.String(), limit)
	if err != nil {
		return nil, fmt.Errorf("read account feed: %w", err)
	}
	type row struct {
		b         *Batch
		entries   []int64
		bals, pos []byte
	}
	var stale []row
	for rows.Next() {
		r := row{b: &Batch{}}
		if err := rows.Scan(&r.b.Version, &r.entries, &r.bals, &r.pos, &r.b.At); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read account feed: %w", err)
		}
		stale = append(stale, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read account feed: %w", err)
	}
	out := make([]*Batch, len(stale))
	for i, r := range stale {
		if err := json.Unmarshal(r.bals, &r.b.Balances); err != nil {
			return nil, fmt.Errorf("account feed %d: %w", r.b.Version, err)
		}
		if err := json.Unmarshal(r.pos, &r.b.Positions); err != nil {
			return nil, fmt.Errorf("account feed %d: %w", r.b.Version, err)
		}
		if r.b.Postings, err = readPostings(ctx, tx, r.entries); err != nil {
			return nil, err
		}
		r.b.setVersion()
		out[i] = r.b
	}
	return out, nil
}
