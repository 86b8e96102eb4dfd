// Package candletest computes candles from a list of trades by the rule
// of docs/api.md "Candles", independently of the SQL that serves them, so
// that tests can hold the REST read, the WebSocket and the fills topic to
// one another.
package candletest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/query-api/internal/tradingreads"
)

// IntervalNames are the intervals the read takes.
var IntervalNames = tradingreads.IntervalNames

// Trade is a trade as a candle sees it.
type Trade struct {
	ID       int64 // trade id (trxId, tradeId)
	At       int64 // executed time, epoch ms
	Price    decimal.Decimal
	Quantity decimal.Decimal
}

// Candles returns the candles of trades per interval of width ms counted
// from origin (epoch ms), oldest first; slots sets each candle's slot.
// Open and close are the first and last trade by (time, id); an interval
// without trades has no candle.
func Candles(trades []Trade, width, origin int64, slots bool) []api.Candle {
	trades = slices.Clone(trades)
	slices.SortFunc(trades, func(a, b Trade) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) })
	var out []api.Candle
	for _, t := range trades {
		start := origin + floorDiv(t.At-origin, width)*width
		if len(out) == 0 || out[len(out)-1].OpenTime != start {
			k := api.Candle{OpenTime: start, CloseTime: start + width, Open: t.Price, High: t.Price, Low: t.Price}
			if slots {
				slot := (start - origin) / width
				k.Slot = &slot
			}
			out = append(out, k)
		}
		k := &out[len(out)-1]
		k.High, k.Low, k.Close = decimal.Max(k.High, t.Price), decimal.Min(k.Low, t.Price), t.Price
		k.Volume = k.Volume.Add(t.Quantity)
		k.Trades++
	}
	return out
}

// Diff describes the first difference between two candle lists as their
// JSON shows them (decimals normalized), or "" when they are equal.
func Diff(got, want []api.Candle) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d candles, want %d", len(got), len(want))
	}
	for i := range got {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			return fmt.Sprintf("candle %d: got %s, want %s", i, g, w)
		}
	}
	return ""
}

// Gaps reports whether some intervals between the candles had no trade.
func Gaps(candles []api.Candle) bool {
	for i := 1; i < len(candles); i++ {
		if candles[i].OpenTime > candles[i-1].CloseTime {
			return true
		}
	}
	return false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
