package live

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/query-api/candletest"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// candleTrade is a trade of the test with its family.
type candleTrade struct {
	candletest.Trade
	family topics.Family
	slot   uint64
}

// candleTrades are ten minutes of trades of both families from base, with
// quiet stretches of ten seconds and a quiet minute.
func candleTrades(base int64) []candleTrade {
	rng := rand.New(rand.NewPCG(7, 11))
	var out []candleTrade
	id := int64(1)
	for at := base; at < base+10*60_000; at += 1 + rng.Int64N(1500) {
		if (at-base)/10_000%4 == 2 || (at-base)/60_000 == 6 {
			continue
		}
		f, price, qty := topics.WholeBlock, decimal.New(40+rng.Int64N(30), -2), decimal.NewFromInt(1)
		if rng.IntN(2) == 0 {
			f, price, qty = topics.InclusionPreconf, decimal.New(20+rng.Int64N(15), -10), decimal.NewFromInt(21000*(1+rng.Int64N(4)))
		}
		out = append(out, candleTrade{Trade: candletest.Trade{ID: id, At: at, Price: price, Quantity: qty},
			family: f, slot: uint64(5000 + rng.IntN(30))})
		id++
	}
	return out
}

// candleView is what a subscriber learnt of one stream: the candles by
// openTime, the intervals closed and the last seq.
type candleView struct {
	candles map[int64]api.Candle
	closed  map[int64]bool
	seq     uint64
}

func (v *candleView) list() []api.Candle {
	out := make([]api.Candle, 0, len(v.candles))
	for _, k := range v.candles {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b api.Candle) int { return int(a.OpenTime - b.OpenTime) })
	return out
}

// TestCandlesChannel subscribes to candles while trades are written as
// the settler writes them and the clock moves on: the snapshot, then the
// updates applied in seq order, end equal to the candles of the trades,
// and every interval that ends after the subscription is closed exactly
// once.
func TestCandlesChannel(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := t.Context()
	var user, acct int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ('0x00000000000000000000000000000000000000a1') RETURNING user_id`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 2, 'p') RETURNING account_id`, user).Scan(&acct); err != nil {
		t.Fatal(err)
	}
	genesis := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	env := environment.Environment{Name: "test", Genesis: genesis, SlotLength: 2 * time.Second}
	base := genesis.Add(time.Hour).UnixMilli() + 300
	trades := candleTrades(base)
	written := 0
	write := func(upTo int64) { // the settler writes the trades executed by upTo
		for ; written < len(trades) && trades[written].At <= upTo; written++ {
			tr := trades[written]
			if _, err := pool.Exec(ctx, `INSERT INTO trades (trade_id, market_id, instrument_id, slot, price, quantity, side,
				primary_sale, taker_order_id, maker_order_id, buyer_account_id, seller_account_id, buyer_fee, seller_fee, executed_at)
				VALUES ($1, $2, $3, $4, $5, $6, true, false, 1, 2, $7, $7, 0, 0, $8)`,
				tr.ID, topics.MarketID(tr.family, tr.slot), topics.InstrumentID(tr.family, tr.slot), tr.slot,
				tr.Price, tr.Quantity, acct, time.UnixMilli(tr.At)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var now atomic.Int64
	now.Store(base + 3*60_000 + 500)
	write(now.Load())
	const grace = 3000
	h := newHarnessWith(t, Config{Now: func() time.Time { return time.UnixMilli(now.Load()) },
		CandlePoll: time.Hour, CandleGrace: grace * time.Millisecond}, Deps{Candles: tradingreads.NewCandles(pool, env)})

	streams := []struct {
		marketType, interval string
		family               topics.Family
		width, origin        int64
	}{
		{MarketWholeBlock, "slot", topics.WholeBlock, 2000, genesis.UnixMilli()},
		{MarketInclusionPreconf, "1m", topics.InclusionPreconf, 60_000, 0},
		{MarketInclusionPreconf, "slot", topics.InclusionPreconf, 2000, genesis.UnixMilli()},
	}
	c := h.dial(nil)
	views := map[string]*candleView{}
	for _, s := range streams {
		c.subscribe(map[string]string{"channel": ChannelCandles, "marketType": s.marketType, "interval": s.interval})
		c.expect(OpSubscribe, CodeOK)
		m := c.next()
		p := decodeP[CandlesPush](t, m)
		if m.E != ChannelCandles || m.A != actionSnapshot || p.MarketType != s.marketType || p.Interval != s.interval {
			t.Fatalf("after subscribe: %s", m.raw)
		}
		v := &candleView{candles: map[int64]api.Candle{}, closed: map[int64]bool{}, seq: p.Seq}
		for _, k := range p.Candles {
			v.candles[k.OpenTime] = k
		}
		views[s.marketType+"/"+s.interval] = v
	}
	subscribedFinal := now.Load() - grace

	rng := rand.New(rand.NewPCG(3, 4))
	for now.Load() < base+11*60_000 {
		now.Add(200 + rng.Int64N(5000))
		write(now.Load())
		if err := h.srv.candles.poll(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range c.upTo() {
			p := decodeP[CandlesPush](t, m)
			v := views[p.MarketType+"/"+p.Interval]
			if m.E != ChannelCandles || v == nil || p.Candle == nil || p.Seq != v.seq+1 {
				t.Fatalf("push %s after seq %d", m.raw, v.seq)
			}
			v.seq = p.Seq
			if v.closed[p.Candle.OpenTime] {
				t.Fatalf("push %s of a closed interval", m.raw)
			}
			v.candles[p.Candle.OpenTime] = *p.Candle
			switch m.A {
			case actionClose:
				v.closed[p.Candle.OpenTime] = true
			case actionUpdate:
			default:
				t.Fatalf("push %s: action %q", m.raw, m.A)
			}
		}
	}

	for _, s := range streams {
		t.Run(s.marketType+"/"+s.interval, func(t *testing.T) {
			var mine []candletest.Trade
			for _, tr := range trades {
				if tr.family == s.family {
					mine = append(mine, tr.Trade)
				}
			}
			want := candletest.Candles(mine, s.width, s.origin, s.interval == "slot")
			if !candletest.Gaps(want) {
				t.Fatal("the trades leave no interval without a trade")
			}
			v := views[s.marketType+"/"+s.interval]
			if d := candletest.Diff(v.list(), want); d != "" {
				t.Fatal(d)
			}
			closes := 0
			for _, k := range want {
				if k.CloseTime > subscribedFinal && !v.closed[k.OpenTime] {
					t.Fatalf("candle %d (%d trades) ended after the subscription and was never closed", k.OpenTime, k.Trades)
				}
				if v.closed[k.OpenTime] {
					closes++
				}
			}
			if closes < 5 {
				t.Fatalf("%d closes; the clock should have closed several intervals", closes)
			}
		})
	}
}

// TestCandlesChannelRefusesBadArgs: the interval is required on candles
// and refused elsewhere, and candles take no instrumentId.
func TestCandlesChannelRefusesBadArgs(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	c := h.dial(nil)
	for _, arg := range []map[string]string{
		{"channel": ChannelCandles, "marketType": MarketWholeBlock},
		{"channel": ChannelCandles, "marketType": MarketWholeBlock, "interval": "2m"},
		{"channel": ChannelCandles, "interval": "1m"},
		{"channel": ChannelCandles, "marketType": MarketWholeBlock, "interval": "1m", "instrumentId": "ETH-WB-5"},
		{"channel": ChannelTicker, "marketType": MarketWholeBlock, "interval": "1m"},
	} {
		c.subscribe(arg)
		if m := c.expect("error", topics.CodeValidation); m.Arg == nil {
			t.Fatalf("%v: %s names no arg", arg, m.raw)
		}
	}
	c.subscribe(map[string]string{"channel": ChannelCandles, "marketType": MarketWholeBlock, "interval": "1m"})
	if m := c.expect("error", httpx.CodeUnavailable); m.Arg == nil || m.Arg.Interval != "1m" {
		t.Fatalf("without a candle reader: %s", m.raw)
	}
}
