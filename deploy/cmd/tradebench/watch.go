package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// tradesPerSlot is the span of trade ids of one slot: the matcher numbers
// a slot's trades slot × 10,000,000 + its count (docs/matcher.md).
const tradesPerSlot = 10_000_000

// ledgerWatch polls Postgres for the trades the settler committed in the
// pairs' slots and notes when each taker order's trade became visible:
// when its transaction committed, where the server notes commit times
// (track_commit_timestamp, which tradebench turns on), and otherwise when
// the read that first returned it was sent. The settler applies a
// partition's fills in order and a slot's fills are on one partition, so
// a slot's trades become visible in trade id order and a cursor per slot
// finds each new one once.
type ledgerWatch struct {
	pool    *pgxpool.Pool
	lo, hi  []int64             // per slot: the last trade id seen, the first id of the next slot
	visible map[int64]time.Time // taker order id: when its trade became visible
	settled map[int64]time.Time // taker order id: the start of the settler's transaction (trades.settled_at)
	seen    atomic.Int64
	// committed is the expression of a trade row's commit time: its
	// transaction's where the server notes commit times, else NULL.
	committed string
}

// newLedgerWatch starts the cursors of slots at the trades already there.
func newLedgerWatch(ctx context.Context, pool *pgxpool.Pool, slots []uint64) (*ledgerWatch, error) {
	w := &ledgerWatch{pool: pool, visible: make(map[int64]time.Time), settled: make(map[int64]time.Time), committed: "NULL::timestamptz"}
	var track string
	if err := pool.QueryRow(ctx, `SELECT current_setting('track_commit_timestamp')`).Scan(&track); err != nil {
		return nil, fmt.Errorf("read track_commit_timestamp: %w", err)
	}
	if track == "on" {
		w.committed = "pg_xact_commit_timestamp(xmin)"
	}
	for _, s := range slots {
		first := int64(s) * tradesPerSlot
		var last int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(max(trade_id), $1) FROM trades WHERE trade_id >= $1 AND trade_id < $2`,
			first, first+tradesPerSlot).Scan(&last); err != nil {
			return nil, fmt.Errorf("trade cursor of slot %d: %w", s, err)
		}
		w.lo, w.hi = append(w.lo, last), append(w.hi, first+tradesPerSlot)
	}
	return w, nil
}

// run reads new trades every interval until ctx ends. A trade counts as
// visible when its transaction committed, or, where the server does not
// note that, at the moment the read that returned it was sent.
func (w *ledgerWatch) run(ctx context.Context, every time.Duration) error {
	slot := make(map[int64]int, len(w.lo))
	for i, hi := range w.hi {
		slot[hi/tradesPerSlot-1] = i
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		at := time.Now()
		rows, err := w.pool.Query(ctx, `SELECT t.trade_id, t.taker_order_id, t.settled_at, t.committed FROM unnest($1::bigint[], $2::bigint[]) AS c(lo, hi)
			CROSS JOIN LATERAL (SELECT trade_id, taker_order_id, settled_at, `+w.committed+` AS committed
			                    FROM trades WHERE trade_id > c.lo AND trade_id < c.hi) t`, w.lo, w.hi)
		if err != nil {
			return ignoreCancel(ctx, fmt.Errorf("read trades: %w", err))
		}
		var id, taker int64
		var settled time.Time
		var committed *time.Time
		_, err = pgx.ForEachRow(rows, []any{&id, &taker, &settled, &committed}, func() error {
			i := slot[id/tradesPerSlot]
			w.lo[i] = max(w.lo[i], id)
			w.visible[taker], w.settled[taker] = at, settled
			if committed != nil {
				w.visible[taker] = *committed
			}
			w.seen.Add(1)
			return nil
		})
		if err != nil {
			return ignoreCancel(ctx, fmt.Errorf("read trades: %w", err))
		}
	}
}

// fillSeen is a fill record as the command read it from the fills topic.
type fillSeen struct {
	trade      int64
	instrument string
	at         time.Time // when the read_committed fetch returned it
}

// fillWatch reads the fills topic (read_committed, as every consumer of
// it does) and notes when each fill was returned, by taker order id.
// Fills returned after sampleFrom are also offered to the REST readers.
type fillWatch struct {
	cl         *kgo.Client
	fills      map[int64]fillSeen
	seen       atomic.Int64
	sampleFrom atomic.Int64 // UNIX ns; 0 = offer none
	samples    chan fillSeen
}

func newFillWatch(brokers []string) (*fillWatch, error) {
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers, ClientID: "tradebench-fills"},
		kgo.ConsumeTopics(topics.Fills), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	return &fillWatch{cl: cl, fills: make(map[int64]fillSeen), samples: make(chan fillSeen)}, nil
}

// run reads fills until ctx ends, then closes the client.
func (w *fillWatch) run(ctx context.Context) error {
	defer w.cl.Close()
	for {
		fs := w.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		at := time.Now()
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("read fills: %w", err)
		}
		from := w.sampleFrom.Load()
		fs.EachRecord(func(r *kgo.Record) {
			e, err := kafka.DecodeRecord(r)
			if err != nil || e.Type != topics.TypeTradeExecuted {
				return
			}
			var f topics.Fill
			if json.Unmarshal(e.Data, &f) != nil {
				return
			}
			s := fillSeen{trade: f.TradeID, instrument: f.InstrumentID, at: at}
			w.fills[f.TakerOrderID] = s
			w.seen.Add(1)
			if from != 0 && at.UnixNano() >= from {
				select {
				case w.samples <- s: // a reader was free
				default:
				}
			}
		})
	}
}

// restReaders sample the lag from a fill record to its trade in the
// public REST read: each free reader takes the next fill returned and
// asks GET /api/v1/p/<family>/trades for it every poll until the answer
// lists it (the first trade at or below its id is the trade itself).
type restReaders struct {
	mu       sync.Mutex
	lags     []time.Duration
	timedOut int
}

// maxReadWait is how long a reader asks for one trade before it counts
// the sample as not seen.
const maxReadWait = 5 * time.Second

func (rr *restReaders) run(ctx context.Context, client *http.Client, base string, n int, poll time.Duration, samples <-chan fillSeen) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case s := <-samples:
					rr.sample(ctx, client, base, poll, s)
				}
			}
		})
	}
	wg.Wait()
}

func (rr *restReaders) sample(ctx context.Context, client *http.Client, base string, poll time.Duration, s fillSeen) {
	fam, _, err := topics.ParseInstrumentID(s.instrument)
	if err != nil {
		return
	}
	u := fmt.Sprintf("%s/api/v1/p/%s/trades?instrumentId=%s&startId=%d&limit=1", base, fam, s.instrument, s.trade)
	for ctx.Err() == nil {
		var d struct {
			Trades []struct {
				TrxID int64 `json:"trxId"`
			} `json:"trades"`
		}
		err := getData(ctx, client, u, &d)
		now := time.Now()
		if err == nil && len(d.Trades) == 1 && d.Trades[0].TrxID == s.trade {
			rr.mu.Lock()
			rr.lags = append(rr.lags, now.Sub(s.at))
			rr.mu.Unlock()
			return
		}
		if now.Sub(s.at) > maxReadWait {
			rr.mu.Lock()
			rr.timedOut++
			rr.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}

// ignoreCancel drops err when ctx ended: a read cut short by the end of
// the run is no failure.
func ignoreCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
