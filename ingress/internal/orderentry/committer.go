package orderentry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"
)

// committer is the group commit of order entry. Postgres commits a few
// thousand transactions a second, so concurrent place requests do not
// each run one: they queue their checked orders, and a drain goroutine
// writes what is queued as one transaction (reservations, order rows,
// outbox rows), hands the batch's commands to Kafka in one go, and answers
// each request once Kafka acknowledged its batch (or the publish timed
// out; committed commands are then delivered by the outbox relay).
//
// Requests are spread over lanes by account, each lane with its own queue
// and at most one drain at a time, so that a few transactions are in
// flight at once while all orders of one account still go through one
// lane in order: its reservations and clientOrderIds never race a
// concurrent transaction of the same process. A lane's drain goroutine
// starts when a request finds none running and exits when the lane's
// queue is empty, so no goroutine outlives the requests it serves.
type committer struct {
	s     *Service
	lanes []*lane
}

// lane is one queue of the committer. mu guards queue and running; ids
// is used only by the lane's one running drain.
type lane struct {
	c *committer

	mu      sync.Mutex
	queue   []*placeRequest
	running bool

	ids idBlock
}

// placeRequest is the part of one place request that needs storing.
type placeRequest struct {
	orders []*order
	done   chan error // buffered; receives exactly one answer
}

func newCommitter(s *Service) *committer {
	c := &committer{s: s, lanes: make([]*lane, s.cfg.Lanes)}
	for i := range c.lanes {
		c.lanes[i] = &lane{c: c}
	}
	return c
}

// submit queues orders of one account and waits until they are stored
// and published, or refused in the transaction (their code is then set).
// An error means nothing of the request was stored.
func (c *committer) submit(account int64, orders []*order) error {
	// Account ids come in patterns (a user's accounts are created
	// together), so they are mixed before they choose a lane.
	l := c.lanes[(uint64(account)*0x9E3779B97F4A7C15>>32)%uint64(len(c.lanes))]
	r := &placeRequest{orders: orders, done: make(chan error, 1)}
	l.mu.Lock()
	l.queue = append(l.queue, r)
	start := !l.running
	l.running = true
	l.mu.Unlock()
	if start {
		go l.drain()
	}
	return <-r.done
}

// drain writes batches until the queue is empty. The first batch waits
// BatchWait so that concurrent requests can join it; later batches take
// what queued up while the previous one was written.
func (l *lane) drain() {
	time.Sleep(l.c.s.cfg.BatchWait)
	for {
		batch := l.take()
		if batch == nil {
			return
		}
		l.commit(batch)
	}
}

// take removes up to BatchMax orders' worth of requests from the queue
// (at least one request), or reports an empty queue and stops running.
func (l *lane) take() []*placeRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.running = false
		l.queue = nil
		return nil
	}
	n, orders := 0, 0
	for n < len(l.queue) && (n == 0 || orders+len(l.queue[n].orders) <= l.c.s.cfg.BatchMax) {
		orders += len(l.queue[n].orders)
		n++
	}
	batch := append([]*placeRequest(nil), l.queue[:n]...)
	l.queue = l.queue[n:]
	return batch
}

// commitTimeout bounds the writing of one batch.
const commitTimeout = 10 * time.Second

// maxAttempts is how often a batch is tried when Postgres aborts its
// transaction for a deadlock or a serialization failure.
const maxAttempts = 3

func (l *lane) commit(batch []*placeRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	var orders []*order
	for _, r := range batch {
		orders = append(orders, r.orders...)
	}
	recs, outboxIDs, err := l.store(ctx, orders)
	if err != nil {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	s := l.c.s
	if s.decisions != nil {
		s.decisions.expectOrders(orders)
	}
	s.outbox.PublishAsync(recs, outboxIDs, func(err error) {
		if err != nil {
			s.log.Warn("order commands stored but not acknowledged by Kafka; the outbox relay delivers them",
				"commands", len(recs), "error", err)
		}
		for _, r := range batch {
			r.done <- nil
		}
	})
}

// store writes the batch, retrying transactions Postgres aborted for a
// conflict, and returns the records to publish with their outbox rows.
func (l *lane) store(ctx context.Context, orders []*order) ([]*kgo.Record, []int64, error) {
	s := l.c.s
	layout, err := s.slotLayout(ctx)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 1; ; attempt++ {
		w := &write{orders: orders, layout: layout, at: s.cfg.Now(), ids: &l.ids}
		err := w.run(ctx, s.pool)
		if err == nil {
			w.apply()
			return w.records, w.outboxIDs, nil
		}
		if attempt == maxAttempts || !conflict(err) {
			return nil, nil, err
		}
	}
}

// conflict reports a transaction Postgres aborted because of concurrent
// ones (deadlock detected, serialization failure): trying again can work.
func conflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}
