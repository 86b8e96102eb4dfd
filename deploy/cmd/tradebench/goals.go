package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// The exchange's goals for trading through the stack.
const (
	// cpuGoal is the CPU an order (this process, Postgres and a real
	// broker's JVM) at cpuGoalPairs pairs.
	cpuGoal      = 350 * time.Microsecond
	cpuGoalPairs = 64
	// rateGoal is the highest orders/s whose answer -> ledger p99 stays
	// within latencyGoal.
	rateGoal = 3000
	// socketGoal is the answer -> WebSocket fill p99 of the paced run at
	// -rate (2,000 orders/s by default).
	socketGoal = 20 * time.Millisecond
	// rateTolerance is how far below its target a paced run may stay and
	// still count as at the target.
	rateTolerance = 0.95
)

// atTarget reports whether a paced run kept its rate.
func (s summary) atTarget() bool { return s.ordersPerS >= rateTolerance*s.rate }

// printGoals prints the goals block.
func printGoals(w io.Writer, results []summary) {
	fmt.Fprintln(w, "\ngoals (each next to its baseline, measured in the same run):")
	for _, l := range goalLines(results) {
		fmt.Fprintln(w, "  "+l)
	}
}

// goalLines is one line a goal for each broker and answer wait, in the
// order they were measured.
func goalLines(results []summary) []string {
	var out []string
	for _, g := range groupRuns(results) {
		head := fmt.Sprintf("%-8s wait %-6s", g[0].kafka, g[0].wait)
		closed := slices.DeleteFunc(slices.Clone(g), func(s summary) bool { return s.rate > 0 })
		out = append(out, head+" "+cpuGoalLine(closed), head+" "+rateGoalLine(closed), head+" "+socketGoalLine(g, closed))
	}
	return out
}

// groupRuns splits the results by broker and answer wait, in order.
func groupRuns(results []summary) [][]summary {
	var out [][]summary
	at := map[[2]string]int{}
	for _, r := range results {
		k := [2]string{r.kafka, r.wait}
		i, ok := at[k]
		if !ok {
			i, at[k] = len(out), len(out)
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// cpuGoalLine is goal 1: the CPU an order of the closed run at 64 pairs,
// or at the largest pairs count measured when there is none at 64.
func cpuGoalLine(closed []summary) string {
	const what = "CPU an order"
	if len(closed) == 0 {
		return what + ": no closed-loop run"
	}
	r := slices.MaxFunc(closed, func(a, b summary) int { return a.pairs - b.pairs })
	if i := slices.IndexFunc(closed, func(s summary) bool { return s.pairs == cpuGoalPairs }); i >= 0 {
		r = closed[i]
	}
	at := fmt.Sprintf("at %d pairs", r.pairs)
	if r.pairs != cpuGoalPairs {
		at += fmt.Sprintf(" (no %d in -pairs)", cpuGoalPairs)
	}
	base := "none (-baseline 0)"
	if r.bareCPU > 0 {
		base = fmt.Sprintf("bare gin handler %s an order in this process", r.bareCPU.Round(time.Microsecond))
	}
	return fmt.Sprintf("%s %s: %s, goal <= %s: %s; baseline: %s", what, at, r.cpu.Round(time.Microsecond), cpuGoal, metText(r.cpu <= cpuGoal), base)
}

// rateGoalLine is goal 2: the highest rate whose answer -> ledger p99
// met latencyGoal, next to the bare handler's rate at its pairs count.
func rateGoalLine(closed []summary) string {
	what := fmt.Sprintf("highest orders/s with answer -> ledger p99 <= %s", latencyGoal)
	best := bestWithinGoal(closed)
	if best == nil {
		return fmt.Sprintf("%s: none within it, goal >= %d: %s", what, rateGoal, metText(false))
	}
	base := "none (-baseline 0)"
	if best.bareOrdersPerS > 0 {
		base = fmt.Sprintf("bare gin handler %.0f orders/s", best.bareOrdersPerS)
	}
	return fmt.Sprintf("%s: %.0f at %d pairs, goal >= %d: %s; baseline: %s", what, best.ordersPerS, best.pairs, rateGoal, metText(best.ordersPerS >= rateGoal), base)
}

// socketGoalLine is goal 3: the answer -> WebSocket fill p99 of the paced
// run, not met when the stack did not keep the rate, next to the closed
// loop at the same pairs count.
func socketGoalLine(g, closed []summary) string {
	i := slices.IndexFunc(g, func(s summary) bool { return s.rate > 0 })
	if i < 0 {
		return "answer -> WS fill p99 at a paced rate: not measured (-rate 0)"
	}
	p := g[i]
	round := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	line := fmt.Sprintf("answer -> WS fill p99 at %.0f orders/s: p50/p99 %s / %s at %.0f orders/s achieved", p.rate,
		round(p.toSocket.P50), round(p.toSocket.P99), p.ordersPerS)
	if !p.atTarget() {
		line += " (NOT at the target)"
	}
	line += fmt.Sprintf(", goal <= %s: %s", socketGoal, metText(p.toSocket.N > 0 && p.toSocket.P99 <= socketGoal && p.atTarget()))
	if j := slices.IndexFunc(closed, func(s summary) bool { return s.pairs == p.pairs }); j >= 0 {
		c := closed[j]
		return line + fmt.Sprintf("; baseline: closed loop at %d pairs %s / %s at %.0f orders/s", c.pairs, round(c.toSocket.P50), round(c.toSocket.P99), c.ordersPerS)
	}
	return line + "; baseline: none (no closed-loop run at its pairs count)"
}
