package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"blockspace.exchange/topics"
)

// orderPath is the place route of a family.
func orderPath(f topics.Family) string { return "/api/v1/" + string(f) + "/order" }

// orderBody is a limit order of one lot at the market's price.
func orderBody(account int64, m market, buy bool) []byte {
	return fmt.Appendf(nil, `{"accountId":%d,"instrumentId":%q,"side":%t,"orderType":2,"quantity":%q,"price":%q}`,
		account, m.instrument, buy, m.lot, m.price)
}

// refusal is an answer that did not accept the order.
type refusal struct {
	status, code int
	body         string
}

func (r *refusal) Error() string { return fmt.Sprintf("order refused: %d %s", r.status, r.body) }

// placeAnswer is the part of a place answer the command reads.
type placeAnswer struct {
	Success bool `json:"success"`
	Data    struct {
		Orders []struct {
			OrderID   *int64 `json:"orderId"`
			ErrorCode *int   `json:"errorCode"`
		} `json:"orders"`
	} `json:"data"`
	Code int `json:"code"`
}

// placeOrder posts one order and returns its id once accepted.
func placeOrder(client *http.Client, u, bearer string, body []byte) (int64, error) {
	id, _, err := placeOrderRaw(client, u, bearer, body)
	return id, err
}

// placeOrderRaw is placeOrder that also returns the answer's bytes.
func placeOrderRaw(client *http.Client, u, bearer string, body []byte) (int64, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, nil, err
	}
	var a placeAnswer
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != http.StatusOK || len(a.Data.Orders) != 1 {
		return 0, raw, &refusal{status: resp.StatusCode, code: a.Code, body: string(raw)}
	}
	o := a.Data.Orders[0]
	if o.OrderID == nil || o.ErrorCode != nil {
		code := 0
		if o.ErrorCode != nil {
			code = *o.ErrorCode
		}
		return 0, raw, &refusal{status: resp.StatusCode, code: code, body: string(raw)}
	}
	return *o.OrderID, raw, nil
}

// leg is one prepared request: who sends it and its body.
type leg struct {
	bearer string
	body   []byte
}

// flow is a pair's requests: offer[h] is the holder's sell while trader h
// holds the lot (0 a, 1 b), take[h] the other trader's buy of it.
type flow struct {
	url         string
	offer, take [2]leg
}

func newFlow(base string, p pair) flow {
	f := flow{url: base + orderPath(p.m.family)}
	ts := [2]*trader{p.a, p.b}
	for h := range 2 {
		holder, other := ts[h], ts[1-h]
		f.offer[h] = leg{holder.bearer, orderBody(holder.preconf, p.m, false)}
		f.take[h] = leg{other.bearer, orderBody(other.preconf, p.m, true)}
	}
	return f
}

// accept is a buy's order id and when the answer accepting it was read.
type accept struct {
	order int64
	at    time.Time
}

// flowResult is what one pair did in a run.
type flowResult struct {
	accepted int
	answers  []time.Duration // request to answer of each accepted order
	takers   []accept
	shed     int   // answers 429, sent again
	err      error // the error that stopped the pair early
}

// run trades the lot back and forth until deadline: the holder offers
// it, the other buys it, and the two swap. The buy is sent once the offer
// is accepted, so its command follows the offer's in the market's
// partition and takes it at once. A closed loop (a zero schedule) starts
// each cycle as soon as the last one ended; a paced one at its time
// (nextCycle). A pair stops at its first error.
func (f flow) run(ctx context.Context, client *http.Client, deadline time.Time, s schedule) flowResult {
	var r flowResult
	var k int64 // the schedule's next cycle
	for h := 0; ctx.Err() == nil && time.Now().Before(deadline); h = 1 - h {
		if s.period > 0 {
			var at time.Time
			k, at = nextCycle(s, k, time.Now())
			if !at.Before(deadline) || !sleepUntil(ctx, at) {
				return r
			}
			k++
		}
		t0 := time.Now()
		if _, r.err = f.place(ctx, client, f.offer[h], &r); r.err != nil {
			return r
		}
		t1 := time.Now()
		var id int64
		if id, r.err = f.place(ctx, client, f.take[h], &r); r.err != nil {
			return r
		}
		t2 := time.Now()
		r.answers = append(r.answers, t1.Sub(t0), t2.Sub(t1))
		r.takers = append(r.takers, accept{id, t2})
	}
	return r
}

// place sends one order until it is accepted: a request the stack sheds
// (429) is sent again after a backoff that starts at 1 ms and doubles up
// to 64 ms, as a client should; the answer time includes the retries.
func (f flow) place(ctx context.Context, client *http.Client, l leg, r *flowResult) (int64, error) {
	backoff := time.Millisecond
	for {
		id, err := placeOrder(client, f.url, l.bearer, l.body)
		var ref *refusal
		if err == nil {
			r.accepted++
			return id, nil
		}
		if !errors.As(err, &ref) || ref.status != http.StatusTooManyRequests {
			return 0, err
		}
		r.shed++
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 64*time.Millisecond)
	}
}

// tradeRun is what all pairs did in one run.
type tradeRun struct {
	accepted int
	elapsed  time.Duration
	answers  []time.Duration
	takers   map[int64]time.Time // buy order id: when its accepting answer was read
	shed     int                 // answers 429, sent again
	stopped  int                 // pairs stopped by an error
	err      error               // the first of those errors
}

// ordersPerSecond is orders accepted per second of the run.
func (r tradeRun) ordersPerSecond() float64 { return float64(r.accepted) / r.elapsed.Seconds() }

// schedule is when a paced pair starts its cycles (an offer and the buy
// that takes it): cycle k at start + k × period. The zero schedule is the
// closed loop.
type schedule struct {
	start  time.Time
	period time.Duration
}

// schedules spreads n pairs that together send rate orders/s (two a
// cycle) over one period: pair i starts i/n of a period after start, so
// that the pairs' cycles interleave instead of arriving together. A rate
// of 0 is the closed loop: zero schedules.
func schedules(start time.Time, n int, rate float64) []schedule {
	out := make([]schedule, n)
	if rate <= 0 {
		return out
	}
	period := time.Duration(float64(2*n) / rate * float64(time.Second))
	for i := range out {
		out[i] = schedule{start: start.Add(period * time.Duration(i) / time.Duration(n)), period: period}
	}
	return out
}

// nextCycle is the cycle a paced pair sends next, at or after its cycle k,
// and when. A cycle whose time is ahead waits for it. A pair that is late
// sends at once; one that is a whole period late or more drops the
// cycles it missed and sends only the latest one due, so that it never
// bursts to catch up more than one cycle: a stack that cannot keep the
// rate shows a lower achieved rate, not a queue of overdue orders.
func nextCycle(s schedule, k int64, now time.Time) (int64, time.Time) {
	at := s.start.Add(time.Duration(k) * s.period)
	if !now.After(at) {
		return k, at
	}
	if late := now.Sub(at); late >= s.period {
		k += int64(late / s.period)
	}
	return k, now
}

// sleepUntil waits until at; false when ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// runFlows runs every pair on its own goroutine for d, as a closed loop
// (rate 0) or paced so that all pairs together send rate orders/s.
func runFlows(ctx context.Context, client *http.Client, flows []flow, d time.Duration, rate float64) tradeRun {
	results := make([]flowResult, len(flows))
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	sched := schedules(start, len(flows), rate)
	for i, f := range flows {
		wg.Go(func() { results[i] = f.run(ctx, client, deadline, sched[i]) })
	}
	wg.Wait()
	r := tradeRun{elapsed: time.Since(start), takers: make(map[int64]time.Time)}
	for _, fr := range results {
		r.accepted += fr.accepted
		r.shed += fr.shed
		r.answers = append(r.answers, fr.answers...)
		for _, a := range fr.takers {
			r.takers[a.order] = a.at
		}
		if fr.err != nil {
			r.stopped++
			if r.err == nil {
				r.err = fr.err
			}
		}
	}
	return r
}
