package api

import "github.com/shopspring/decimal"

// Candle is the candle resource of docs/api.md "Candles", which
// query-api's read answers and its WebSocket pushes; this is its one
// definition. It is the price of a market family over one interval: the
// first, highest, lowest and last price of the interval's trades, their
// summed quantity (blocks of the whole-block family, gas units of
// inclusion preconf) and their number. Open and close are the first and last trade
// by (executed time, trade id). An interval without trades has no candle.
type Candle struct {
	OpenTime  int64           `json:"openTime"`  // epoch ms, first instant of the interval
	CloseTime int64           `json:"closeTime"` // epoch ms, first instant after it
	Slot      *int64          `json:"slot,omitempty"`
	Open      decimal.Decimal `json:"open"`
	High      decimal.Decimal `json:"high"`
	Low       decimal.Decimal `json:"low"`
	Close     decimal.Decimal `json:"close"`
	Volume    decimal.Decimal `json:"volume"`
	Trades    int64           `json:"trades"`
}
