package book

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkBookMix measures book operations per second on the workload:
//
//   - 60% place a resting limit order of 1 to 10 units, 1 to 8 ticks away
//     from the middle, on a random side, for one of 100 accounts;
//   - 25% cancel a random order placed earlier (it may have traded away;
//     then the cancel is a miss, as in real traffic);
//   - 15% a crossing immediate-or-cancel order of 1 to 44 units that sweeps
//     up to 8 ticks through the other side, trading with several makers.
//
// The quantities keep the book at a depth of tens to hundreds of orders
// over a few ticks, the shape of a slot's market. 1,000 orders rest before
// timing starts. One b.N iteration is one operation; ops/s is the figure
// (run with -cpu 1 for one core), "resting" the depth at the end.
func BenchmarkBookMix(b *testing.B) {
	const mid = 10_000
	rng := rand.New(rand.NewPCG(1, 2))
	bk := New()
	live := make([]int64, 0, 1<<16)
	var events []Event
	var nextID int64
	place := func() {
		nextID++
		side, price := Buy, int64(mid-1-rng.IntN(8))
		if rng.IntN(2) == 0 {
			side, price = Sell, int64(mid+1+rng.IntN(8))
		}
		o := Order{ID: nextID, Account: int64(rng.IntN(100)), Side: side, Price: price, Qty: int64(1 + rng.IntN(10))}
		_, events = bk.Place(o, GoodTillCancel, false, events[:0])
		live = append(live, nextID)
	}
	for range 1000 {
		place()
	}
	b.ResetTimer()
	for range b.N {
		switch r := rng.IntN(100); {
		case r < 60:
			place()
		case r < 85 && len(live) > 0:
			i := rng.IntN(len(live))
			bk.Cancel(live[i])
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		default:
			nextID++
			side, price := Buy, int64(mid+8)
			if rng.IntN(2) == 0 {
				side, price = Sell, int64(mid-8)
			}
			o := Order{ID: nextID, Account: -1, Side: side, Price: price, Qty: int64(1 + rng.IntN(44))}
			_, events = bk.Place(o, ImmediateOrCancel, false, events[:0])
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(bk.Len()), "resting")
}
