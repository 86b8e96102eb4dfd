package main

import "time"

// joined is one stage's latencies: for each order with both a start and
// an end, end − start.
type joined struct {
	lags    []time.Duration
	missing int // orders with a start and no end
	early   int // orders whose end came before their start, counted as 0
}

// joinLags pairs start and end times by order id. An end before its
// start (the trade was visible before the client had read the answer that
// accepted its order) counts as 0.
func joinLags(start, end map[int64]time.Time) joined {
	j := joined{lags: make([]time.Duration, 0, len(start))}
	for id, s := range start {
		e, ok := end[id]
		switch {
		case !ok:
			j.missing++
		case e.Before(s):
			j.early++
			j.lags = append(j.lags, 0)
		default:
			j.lags = append(j.lags, e.Sub(s))
		}
	}
	return j
}
