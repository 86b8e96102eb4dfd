package tradingreads

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// Candle sizes of the candles read (docs/api.md "Candles"): the answer
// covers at most limit intervals, so the trades it aggregates are those of
// limit intervals at most.
const (
	DefaultCandles = 100
	MaxCandles     = 1000
)

// maxTime bounds startTime and endTime: the last millisecond of 9999.
const maxTime = 253402300799999

// Interval is a candle width: a fixed duration counted from the UNIX
// epoch (1m, 5m, 1h, 1d, so 1d candles are UTC days), or the slot
// clock's slots counted from genesis (slot).
type Interval struct {
	Name   string
	Width  int64 // ms
	origin int64 // epoch ms of an interval's start
	slots  bool
}

// IntervalNames are the intervals a client may name, shortest first.
var IntervalNames = []string{"slot", "1m", "5m", "1h", "1d"}

// Floor returns the start of the interval that holds t (epoch ms).
func (iv Interval) Floor(t int64) int64 {
	n := (t - iv.origin) / iv.Width
	if (t-iv.origin)%iv.Width < 0 {
		n--
	}
	return iv.origin + n*iv.Width
}

// Candles reads the candles of both families from the trades table.
type Candles struct {
	pool  *pgxpool.Pool
	clock environment.Environment
}

// NewCandles returns the candles of the trades in pool; clock gives the
// slot interval's genesis and length.
func NewCandles(pool *pgxpool.Pool, clock environment.Environment) *Candles {
	return &Candles{pool: pool, clock: clock}
}

// Interval returns the interval of a name of IntervalNames.
func (c *Candles) Interval(name string) (Interval, bool) {
	widths := map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "1h": time.Hour, "1d": 24 * time.Hour}
	if name == "slot" {
		return Interval{Name: name, Width: c.clock.SlotLength.Milliseconds(), origin: c.clock.Genesis.UnixMilli(), slots: true}, true
	}
	w, ok := widths[name]
	return Interval{Name: name, Width: w.Milliseconds()}, ok
}

// candlesSQL aggregates one family's trades of [$4, $5) per interval of
// $2 ms from origin $3 (epoch ms, made exact instants by adding them to
// the epoch), through trades_family_time (migration 0017).
const candlesSQL = `SELECT date_bin($2::bigint * interval '1 millisecond', executed_at,
	                'epoch'::timestamptz + $3::bigint * interval '1 millisecond') AS bucket,
		(array_agg(price ORDER BY executed_at, trade_id))[1], max(price), min(price),
		(array_agg(price ORDER BY executed_at DESC, trade_id DESC))[1], sum(quantity), count(*)
	FROM trades
	WHERE market_id / 1000000000000 = $1
	  AND executed_at >= 'epoch'::timestamptz + $4::bigint * interval '1 millisecond'
	  AND executed_at < 'epoch'::timestamptz + $5::bigint * interval '1 millisecond'
	GROUP BY bucket ORDER BY bucket`

// Read returns the candles of family f whose interval starts in
// [from, to) (epoch ms, both interval starts), oldest first.
func (c *Candles) Read(ctx context.Context, f topics.Family, iv Interval, from, to int64) ([]api.Candle, error) {
	rows, _ := c.pool.Query(ctx, candlesSQL, newFamily(f).minMarket/familySpan, iv.Width, iv.origin, from, to)
	candles, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (api.Candle, error) {
		var k api.Candle
		var bucket time.Time
		err := row.Scan(&bucket, &k.Open, &k.High, &k.Low, &k.Close, &k.Volume, &k.Trades)
		k.OpenTime = bucket.UnixMilli()
		k.CloseTime = k.OpenTime + iv.Width
		if iv.slots {
			slot := (k.OpenTime - iv.origin) / iv.Width
			k.Slot = &slot
		}
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("read candles: %w", err)
	}
	return candles, nil
}

// candleQuery is a parsed candles request: the intervals starting in
// [from, to).
type candleQuery struct {
	iv       Interval
	from, to int64
}

// handler serves GET /api/v1/p/<family>/candles.
func (c *Candles) handler(f topics.Family) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		q, err := c.parseQuery(ctx, time.Now().UnixMilli())
		if err != nil {
			httpx.Fail(ctx, err)
			return
		}
		candles, err := c.Read(ctx, f, q.iv, q.from, q.to)
		if err != nil {
			httpx.Fail(ctx, err)
			return
		}
		httpx.OK(ctx, gin.H{"interval": q.iv.Name, "candles": candles})
	}
}

// Register mounts the candles read of both families; needsDB answers 503
// while Postgres is down.
func (c *Candles) Register(rt gin.IRouter, needsDB gin.HandlerFunc) {
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		rt.GET("/api/v1/p/"+string(f)+"/candles", needsDB, c.handler(f))
	}
}

// parseQuery reads interval (default 1m), startTime, endTime (epoch ms,
// default now) and limit (default 100, at most 1000). The answer holds the
// candles whose openTime lies in [startTime, endTime]: with startTime the
// first limit intervals from it, without it the last limit intervals up
// to endTime.
func (c *Candles) parseQuery(ctx *gin.Context, now int64) (candleQuery, error) {
	var q candleQuery
	name := ctx.Query("interval")
	if name == "" {
		name = "1m"
	}
	iv, ok := c.Interval(name)
	if !ok {
		return q, httpx.Invalid("query parameter interval must be one of %s, got %q", strings.Join(IntervalNames, ", "), short(name))
	}
	q.iv = iv
	start, err := httpx.QueryInt64(ctx, "startTime", false, -1, 0, maxTime)
	if err != nil {
		return q, err
	}
	end, err := httpx.QueryInt64(ctx, "endTime", false, now, 0, maxTime)
	if err != nil {
		return q, err
	}
	limit, err := httpx.QueryInt64(ctx, "limit", false, DefaultCandles, 1, MaxCandles)
	if err != nil {
		return q, err
	}
	if start > end {
		return q, httpx.Invalid("query parameter startTime %d is after endTime %d", start, end)
	}
	q.to = iv.Floor(end) + iv.Width
	if start < 0 {
		q.from = q.to - limit*iv.Width
		return q, nil
	}
	q.from = iv.Floor(start)
	if q.from < start {
		q.from += iv.Width
	}
	q.to = min(q.to, q.from+limit*iv.Width)
	return q, nil
}
