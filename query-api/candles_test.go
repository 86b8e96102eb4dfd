package queryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/query-api/candletest"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// candleGenesis is the slot clock of the candle tests: 2 s slots.
var candleGenesis = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// candleWidths are the widths of the intervals in ms, on candleGenesis.
var candleWidths = map[string]int64{"slot": 2000, "1m": 60_000, "5m": 300_000, "1h": 3_600_000, "1d": 86_400_000}

// candleFixture is a query-api over trades of both families spread over
// two hours of many slots, with quiet minutes, a quiet quarter of an hour
// and trades of one millisecond.
type candleFixture struct {
	h           http.Handler
	pool        *pgxpool.Pool
	start, end  int64               // epoch ms of the first trade and after the last
	instruments map[string][]string // instrument ids by family
}

func newCandleFixture(t testing.TB) *candleFixture {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	env, err := environment.Lookup("dev")
	if err != nil {
		t.Fatal(err)
	}
	env.Genesis = candleGenesis
	s, err := New(context.Background(), Config{Environment: env},
		Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	u := newIssuer(t, s, pool).user(t, "0x00000000000000000000000000000000000000a1")
	f := &candleFixture{h: s.Handler(), pool: pool, instruments: map[string][]string{}}
	rng := rand.New(rand.NewPCG(23, 5))
	base := candleGenesis.Add(time.Hour).UnixMilli() + 700 // not on an interval boundary
	f.start, f.end = base, base
	id := int64(1)
	for at := base; at < base+2*3_600_000; at += 1 + rng.Int64N(9000) {
		minute := (at - base) / 60_000
		if minute%7 == 3 || (minute >= 40 && minute < 55) {
			continue // quiet minutes and a quiet quarter of an hour
		}
		for range 1 + rng.IntN(2) { // at times two trades in one millisecond
			f.addTrade(t, rng, id, at, u)
			id++
		}
		f.end = at + 1
	}
	return f
}

// addTrade inserts a trade of a random family and slot at epoch ms at,
// as the settler writes it. Trade ids do not follow time everywhere: every
// fifth trade takes an id beyond the others', as trades of other
// partitions may.
func (f *candleFixture) addTrade(t testing.TB, rng *rand.Rand, id, at int64, u testUser) {
	t.Helper()
	fam, price, qty := topics.WholeBlock, decimal.New(40+rng.Int64N(30), -2), "1"
	if rng.IntN(2) == 0 {
		fam, price, qty = topics.InclusionPreconf, decimal.New(20+rng.Int64N(15), -10), fmt.Sprint(21000*(1+rng.IntN(5)))
	}
	if id%5 == 0 {
		id += 1_000_000
	}
	slot := uint64(3600 + rng.IntN(40)*100)
	inst := topics.InstrumentID(fam, slot)
	if !slices.Contains(f.instruments[string(fam)], inst) {
		f.instruments[string(fam)] = append(f.instruments[string(fam)], inst)
	}
	_, err := f.pool.Exec(context.Background(), `INSERT INTO trades (trade_id, market_id, instrument_id, slot, price, quantity,
		preconf_quantity, side, primary_sale, taker_order_id, maker_order_id, buyer_account_id, seller_account_id,
		buyer_fee, seller_fee, executed_at)
		VALUES ($1, $2, $3, $4, $5, $6::numeric, NULL, true, false, 1, 2, $7, $7, 0, 0, $8)`,
		id, topics.MarketID(fam, slot), inst, slot, price.StringFixed(12), qty, u.pre, time.UnixMilli(at))
	if err != nil {
		t.Fatal(err)
	}
}

// listed reads every trade of the family through the public trades
// listing, page by page.
func (f *candleFixture) listed(t *testing.T, fam string) []candletest.Trade {
	t.Helper()
	var out []candletest.Trade
	for _, inst := range f.instruments[fam] {
		start := int64(0)
		for {
			path := fmt.Sprintf("/api/v1/p/%s/trades?instrumentId=%s&limit=100&startId=%d", fam, inst, start)
			var page struct {
				Trades []struct {
					TrxID    int64           `json:"trxId"`
					Price    decimal.Decimal `json:"price"`
					Quantity decimal.Decimal `json:"quantity"`
					Date     int64           `json:"date"`
				} `json:"trades"`
			}
			f.read(t, path, &page)
			for _, tr := range page.Trades {
				out = append(out, candletest.Trade{ID: tr.TrxID, At: tr.Date, Price: tr.Price, Quantity: tr.Quantity})
			}
			if len(page.Trades) < 100 {
				break
			}
			start = page.Trades[len(page.Trades)-1].TrxID - 1
		}
	}
	return out
}

// read GETs path, which must succeed, into data.
func (f *candleFixture) read(t *testing.T, path string, data any) {
	t.Helper()
	r := get(t, f.h, path)
	if r.Status != 200 || !r.Body.Success {
		t.Fatalf("GET %s: status %d code %d %q", path, r.Status, r.Body.Code, r.Body.Message)
	}
	if err := json.Unmarshal(r.Body.Data, data); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// candles GETs the candles of a family with the given query.
func (f *candleFixture) candles(t *testing.T, fam, query string) []api.Candle {
	t.Helper()
	var data struct {
		Candles []api.Candle `json:"candles"`
	}
	f.read(t, "/api/v1/p/"+fam+"/candles?"+query, &data)
	return data.Candles
}

// pageCandles reads the candles of [from, to) page by page with startTime,
// each page starting limit intervals after the last.
func (f *candleFixture) pageCandles(t *testing.T, fam, interval string, from, to int64, limit int64) []api.Candle {
	t.Helper()
	var out []api.Candle
	width := candleWidths[interval]
	for start := from; start < to; start += limit * width {
		page := f.candles(t, fam, fmt.Sprintf("interval=%s&startTime=%d&endTime=%d&limit=%d", interval, start, to-1, limit))
		if int64(len(page)) > limit {
			t.Fatalf("%s %s from %d: %d candles, limit %d", fam, interval, start, len(page), limit)
		}
		out = append(out, page...)
	}
	return out
}

// TestCandlesMatchTradesListings computes the candles of every interval
// of both families from the public trades listings and holds the candles
// read to them, over two hours of trades with quiet intervals between.
func TestCandlesMatchTradesListings(t *testing.T) {
	f := newCandleFixture(t)
	origin := map[string]int64{"slot": candleGenesis.UnixMilli()}
	for _, fam := range []string{"wholeblock", "inclusion-preconf"} {
		points := f.listed(t, fam)
		if len(points) < 500 {
			t.Fatalf("%s: %d trades listed; the fixture should have hundreds", fam, len(points))
		}
		for _, interval := range tradingreads.IntervalNames {
			t.Run(fam+"/"+interval, func(t *testing.T) {
				width := candleWidths[interval]
				want := candletest.Candles(points, width, origin[interval], interval == "slot")
				if (interval == "slot" || interval == "1m") && !candletest.Gaps(want) {
					t.Fatalf("no %s interval without a trade among %d candles", interval, len(want))
				}
				from := f.start - (f.start-origin[interval])%width
				got := f.pageCandles(t, fam, interval, from, f.end, 1000)
				if d := candletest.Diff(got, want); d != "" {
					t.Fatal(d)
				}
			})
		}
	}
}

// TestCandlesWindow: without startTime the answer holds the last limit
// intervals up to endTime; with it the first limit intervals from the
// first interval that starts at or after it.
func TestCandlesWindow(t *testing.T) {
	f := newCandleFixture(t)
	const minute = 60_000
	all := candletest.Candles(f.listed(t, "wholeblock"), minute, 0, false)
	in := func(from, to int64) []api.Candle {
		var out []api.Candle
		for _, k := range all {
			if k.OpenTime >= from && k.OpenTime <= to {
				out = append(out, k)
			}
		}
		return out
	}
	end := f.start + 30*minute + 5
	endMinute := end - end%minute
	cases := []struct {
		name, query string
		want        []api.Candle
	}{
		{"last intervals up to endTime", fmt.Sprintf("endTime=%d&limit=10", end), in(endMinute-9*minute, endMinute)},
		{"endTime on a boundary", fmt.Sprintf("endTime=%d&limit=3", endMinute), in(endMinute-2*minute, endMinute)},
		{"first intervals from startTime", fmt.Sprintf("startTime=%d&endTime=%d&limit=10", endMinute, f.end), in(endMinute, endMinute+9*minute)},
		{"startTime inside an interval", fmt.Sprintf("startTime=%d&endTime=%d&limit=5", end, f.end), in(endMinute+minute, endMinute+5*minute)},
		{"endTime before limit intervals", fmt.Sprintf("startTime=%d&endTime=%d&limit=100", endMinute, endMinute+4*minute), in(endMinute, endMinute+4*minute)},
		{"interval default 1m", fmt.Sprintf("startTime=%d&endTime=%d", f.start, f.end), in(f.start, f.start-f.start%minute+100*minute)},
		{"empty interval is 1m", fmt.Sprintf("interval=&startTime=%d&endTime=%d&limit=10", endMinute, f.end), in(endMinute, endMinute+9*minute)},
		{"before the first trade", fmt.Sprintf("endTime=%d", f.start-minute), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 && tc.name != "before the first trade" {
				t.Fatal("the case selects no candle of the fixture")
			}
			if d := candletest.Diff(f.candles(t, "wholeblock", tc.query), tc.want); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestCandlesRefuseBadInput: every malformed or out-of-range parameter is
// a 400 code 1001 whose message names the parameter.
func TestCandlesRefuseBadInput(t *testing.T) {
	f := newCandleFixture(t)
	cases := []struct{ name, query, param string }{
		{"unknown interval", "interval=2m", "interval"},
		{"interval in upper case", "interval=1M", "interval"},
		{"negative startTime", "startTime=-1", "startTime"},
		{"startTime not a number", "startTime=yesterday", "startTime"},
		{"startTime beyond year 9999", "startTime=253402300800000", "startTime"},
		{"endTime not a number", "endTime=1.5", "endTime"},
		{"negative endTime", "endTime=-5", "endTime"},
		{"startTime after endTime", "startTime=2000&endTime=1000", "startTime"},
		{"limit 0", "limit=0", "limit"},
		{"limit above the maximum", "limit=1001", "limit"},
		{"limit not a number", "limit=all", "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, fam := range []string{"wholeblock", "inclusion-preconf"} {
				r := get(t, f.h, "/api/v1/p/"+fam+"/candles?"+tc.query)
				if r.Status != 400 || r.Body.Code != 1001 || !contains(r.Body.Message, tc.param) {
					t.Fatalf("%s: status %d code %d %q, want 400 code 1001 naming %s", fam, r.Status, r.Body.Code, r.Body.Message, tc.param)
				}
			}
		})
	}
}
