package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/query-api/candletest"
	"blockspace.exchange/topics"
)

// fillRecord is a trade.executed record of the fills topic as any JSON
// reader sees it (docs/topics.md "Candles from the fills topic").
type fillRecord struct {
	Type string `json:"type"`
	Time int64  `json:"time"`
	Data struct {
		TradeID  int64           `json:"tradeId"`
		MarketID int64           `json:"marketId"`
		Price    decimal.Decimal `json:"price"`
		Quantity decimal.Decimal `json:"quantity"`
	} `json:"data"`
}

// TestCandlesFromFillsEqualTheRead trades the whole blocks of eight slots
// and preconf gas of each, with slots without trades between some of
// them, then reads the fills topic from its start with a plain Kafka
// client, computes the candles of every interval from the records as
// docs/topics.md shows, and holds them equal to the candles read of both
// families.
func TestCandlesFromFillsEqualTheRead(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "1s", "DEMO_VALIDATOR": "false"})
	c := client{t: t, base: s.Addresses().REST}
	env := s.cfg.Environment
	seller, buyer := logIn(t, c, newWallet(t)), logIn(t, c, newWallet(t))
	registerValidator(t, seller, env.ChainID, "candles from fills validator 0001")
	s.fund(buyer, 1, "8", "7.5")
	buyer.waitBalance("the buyer's transfer applied", buyer.preconf, "7.5", "0")

	var slots []uint64
	poll.Until(t, "eight whole-block markets with time left", func() bool {
		slots = slots[:0]
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if time.UnixMilli(m.MaturityTime).After(time.Now().Add(45 * time.Second)) {
				slots = append(slots, m.Slot)
			}
		}
		return len(slots) >= 8
	})
	slices.Sort(slots)
	limit := func(tr *trader, instrument string, buy bool, quantity, price string) map[string]any {
		return map[string]any{"accountId": tr.preconf, "instrumentId": instrument, "side": buy, "orderType": 2, "quantity": quantity, "price": price}
	}
	for i, slot := range slots[:8] {
		if i%3 == 2 {
			time.Sleep(3 * env.SlotLength) // slots without a trade
		}
		wb, pc := topics.InstrumentID(topics.WholeBlock, slot), topics.InstrumentID(topics.InclusionPreconf, slot)
		price := fmt.Sprintf("0.%d", 40+3*i)
		sell := seller.place(limit(seller, wb, false, "1", price))
		buy := buyer.place(limit(buyer, wb, true, "1", price))
		buyer.waitOrders("the block bought", topics.WholeBlock, map[int64]int{buy: topics.OrderStatusDone})
		seller.waitOrders("the block sold", topics.WholeBlock, map[int64]int{sell: topics.OrderStatusDone})
		poll.Until(t, "the buyer holds the slot's preconf gas", func() bool {
			var q decimal.Decimal
			err := s.pool.QueryRow(t.Context(), `SELECT quantity FROM positions WHERE account_id = $1 AND instrument_id = $2`, buyer.preconf, pc).Scan(&q)
			return err == nil && q.IsPositive()
		})
		gasPrice := fmt.Sprintf("0.00000000%d", 2+i%5)
		ask := buyer.place(limit(buyer, pc, false, fmt.Sprint(21000*(1+i%3)), gasPrice))
		bid := seller.place(limit(seller, pc, true, fmt.Sprint(21000*(1+i%3)), gasPrice))
		seller.waitOrders("the preconf gas bought", topics.InclusionPreconf, map[int64]int{bid: topics.OrderStatusDone})
		buyer.waitOrders("the preconf gas sold", topics.InclusionPreconf, map[int64]int{ask: topics.OrderStatusDone})
	}

	trades := readFills(t, s, 16)
	origin := map[string]int64{"slot": env.Genesis.UnixMilli()}
	widths := map[string]int64{"slot": env.SlotLength.Milliseconds(), "1m": 60_000, "5m": 300_000, "1h": 3_600_000, "1d": 86_400_000}
	for fam, path := range map[topics.Family]string{topics.WholeBlock: "wholeblock", topics.InclusionPreconf: "inclusion-preconf"} {
		if len(trades[fam]) != 8 {
			t.Fatalf("%s: %d trades on the fills topic, want 8", fam, len(trades[fam]))
		}
		for _, interval := range candletest.IntervalNames {
			t.Run(path+"/"+interval, func(t *testing.T) {
				want := candletest.Candles(trades[fam], widths[interval], origin[interval], interval == "slot")
				if interval == "slot" && !candletest.Gaps(want) {
					t.Fatal("no slot without a trade between the candles")
				}
				a := c.do("GET", fmt.Sprintf("/api/v1/p/%s/candles?interval=%s&startTime=%d&endTime=%d&limit=1000",
					path, interval, want[0].OpenTime, want[len(want)-1].OpenTime), nil, nil)
				var got struct{ Candles []api.Candle }
				if a.status != 200 || json.Unmarshal(a.body.Data, &got) != nil {
					t.Fatalf("candles read: %d %s", a.status, a.raw)
				}
				if d := candletest.Diff(got.Candles, want); d != "" {
					t.Fatal(d)
				}
			})
		}
	}
}

// readFills reads the fills topic from its start until it has seen n
// distinct trades, and returns them by family: the family from the market
// id (docs/topics.md), the time from the envelope.
func readFills(t *testing.T, s *running, n int) map[topics.Family][]candletest.Trade {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: s.brokers, ClientID: "candles-reader"},
		kgo.ConsumeTopics(topics.Fills), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	seen := map[int64]bool{}
	out := map[topics.Family][]candletest.Trade{}
	for len(seen) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var f fillRecord
			if json.Unmarshal(r.Value, &f) != nil || f.Type != "trade.executed" || seen[f.Data.TradeID] {
				return
			}
			seen[f.Data.TradeID] = true
			fam := topics.InclusionPreconf
			if f.Data.MarketID/1_000_000_000_000 == 2 {
				fam = topics.WholeBlock
			}
			out[fam] = append(out[fam], candletest.Trade{ID: f.Data.TradeID, At: f.Time, Price: f.Data.Price, Quantity: f.Data.Quantity})
		})
	}
	if len(seen) < n {
		t.Fatalf("%d trades on the fills topic, want %d", len(seen), n)
	}
	return out
}
