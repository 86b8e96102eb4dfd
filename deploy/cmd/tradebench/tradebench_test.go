package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/deploy/loadtest"
	"blockspace.exchange/topics"
)

func TestJoinLags(t *testing.T) {
	t0 := time.Unix(1000, 0)
	start := map[int64]time.Time{1: t0, 2: t0, 3: t0.Add(time.Second), 4: t0}
	end := map[int64]time.Time{1: t0.Add(5 * time.Millisecond), 3: t0.Add(time.Second - time.Millisecond), 4: t0.Add(70 * time.Millisecond), 9: t0}
	j := joinLags(start, end)
	slices.Sort(j.lags)
	if want := []time.Duration{0, 5 * time.Millisecond, 70 * time.Millisecond}; !slices.Equal(j.lags, want) {
		t.Errorf("lags %v, want %v", j.lags, want)
	}
	if j.missing != 1 || j.early != 1 {
		t.Errorf("missing %d early %d, want 1 and 1 (an end without a start is not an order of the run)", j.missing, j.early)
	}
}

func TestPickMarkets(t *testing.T) {
	now := time.Unix(10_000, 0)
	at := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	pc := []listedMarket{
		{Slot: 9, Status: topics.MarketStatusOpen, MaturityTime: at(3 * time.Minute)},
		{Slot: 4, Status: topics.MarketStatusOpen, MaturityTime: at(30 * time.Second)}, // closes before the run ends
		{Slot: 7, Status: topics.MarketStatusOpen, MaturityTime: at(2 * time.Minute)},
		{Slot: 8, Status: 2, MaturityTime: at(2 * time.Minute)}, // trading closed
	}
	wb := []listedMarket{
		{Slot: 30, Status: topics.MarketStatusOpen, MaturityTime: at(time.Hour)},
		{Slot: 20, Status: topics.MarketStatusOpen, MaturityTime: at(time.Hour)},
	}
	until := now.Add(time.Minute)
	got, err := pickMarkets(pc, wb, until, 3)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.instrument+" "+m.lot+"@"+m.price)
	}
	want := []string{"ETH-PC-7 21000@0.000000002", "ETH-PC-9 21000@0.000000002", "ETH-WB-20 1@0.01"}
	if !slices.Equal(ids, want) {
		t.Errorf("picked %v, want %v", ids, want)
	}
	if _, err := pickMarkets(pc, wb, until, 5); err == nil {
		t.Error("5 pairs from 4 usable markets: no error")
	}
}

func TestOrderBody(t *testing.T) {
	m := market{family: topics.InclusionPreconf, instrument: "ETH-PC-7", lot: "21000", price: "0.000000002"}
	want := `{"accountId":12,"instrumentId":"ETH-PC-7","side":true,"orderType":2,"quantity":"21000","price":"0.000000002"}`
	if got := string(orderBody(12, m, true)); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

func TestParseStat(t *testing.T) {
	// A backend whose name holds spaces and a parenthesis; utime 250,
	// stime 50, cutime 7, cstime 3 ticks.
	line := "4242 (postgres: bob db (x) idle) S 4000 4000 4000 0 -1 4194560 500 0 0 0 250 50 7 3 20 0 1 0 100 2000000 300 18446744073709551615 0\n"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.pid != 4242 || st.ppid != 4000 || st.own != 3*time.Second || st.children != 100*time.Millisecond {
		t.Errorf("parsed %+v", st)
	}
	if _, err := parseStat("4242 postgres S 1"); err == nil {
		t.Error("a line without a command name: no error")
	}
	if _, err := parseStat("4242 (postgres) S 1 2 3"); err == nil {
		t.Error("a short line: no error")
	}
}

func TestBestWithinGoal(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	results := []summary{
		{pairs: 16, ordersPerS: 1600, toLedger: loadtest.Dist{N: 10, P99: ms(60)}},
		{pairs: 32, ordersPerS: 2300, toLedger: loadtest.Dist{N: 10, P99: ms(100)}},
		{pairs: 64, ordersPerS: 2700, toLedger: loadtest.Dist{N: 10, P99: ms(101)}},
		{pairs: 8, ordersPerS: 3000, toLedger: loadtest.Dist{}}, // no trade seen: no figure
	}
	if b := bestWithinGoal(results); b == nil || b.pairs != 32 {
		t.Fatalf("best %+v, want the 32 pairs (p99 at the goal, the highest rate within it)", b)
	}
	if b := bestWithinGoal(results[2:]); b != nil {
		t.Fatalf("best %+v, want none: no run met the goal", b)
	}
}

func TestParseBrokers(t *testing.T) {
	if got, err := parseBrokers("embedded, real"); err != nil || !slices.Equal(got, []string{"kfake", "apache"}) {
		t.Fatalf("parseBrokers: %v %v", got, err)
	}
	if _, err := parseBrokers("real,redpanda"); err == nil || !strings.Contains(err.Error(), `"redpanda" is neither`) {
		t.Fatalf("parseBrokers of a bad list: %v", err)
	}
}

func TestParsePairs(t *testing.T) {
	if got, err := parsePairs("16, 32,64"); err != nil || !slices.Equal(got, []int{16, 32, 64}) {
		t.Fatalf("parsePairs: %v %v", got, err)
	}
	if _, err := parsePairs("16,x"); err == nil || !strings.Contains(err.Error(), `"x" is not a number`) {
		t.Fatalf("parsePairs of a bad list: %v", err)
	}
}

func TestParseWaits(t *testing.T) {
	if got, err := parseWaits("200ms, 0"); err != nil || !slices.Equal(got, []string{"200ms", "0"}) {
		t.Fatalf("parseWaits: %v %v", got, err)
	}
	for _, bad := range []string{"200ms,soon", "-1s", "6s"} {
		if _, err := parseWaits(bad); err == nil || !strings.Contains(err.Error(), "not a duration from 0 to 5s") {
			t.Fatalf("parseWaits(%q): %v", bad, err)
		}
	}
}

// A push is read by its exact keys: "e" is the channel and "E" its time,
// which encoding/json would otherwise try to put in the same field.
func TestOrderPushReadsAFilledUpdate(t *testing.T) {
	raw := `{"e":"accountOrderUpdate","E":1795628933898,"s":"ETH-PC-1","a":"filled","P":{"orderId":1004,"accountId":8,"status":10,"fulfilled":"21000"}}`
	var p orderPush
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.E != "accountOrderUpdate" || p.Time != 1795628933898 ||
		p.P.OrderID != 1004 || p.P.Status != 10 {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestValidate(t *testing.T) {
	ok := options{sweep: []int{16, 64}, brokers: []string{"kfake"}, duration: 10 * time.Second, baseline: 4 * time.Second,
		poll: 2 * time.Millisecond, readPoll: 5 * time.Millisecond, readers: 4, rate: 2000}
	if err := ok.validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"no rate is fine", func(o *options) { o.rate = 0 }, ""},
		{"rate below 10", func(o *options) { o.rate = 5 }, "-rate 5: want 0 (no paced run) or 10 to 100000"},
		{"negative rate", func(o *options) { o.rate = -1 }, "-rate -1:"},
		{"rate too high", func(o *options) { o.rate = 200_000 }, "-rate 200000:"},
		{"pgstat on the dev stack", func(o *options) { o.pgstat = true }, ""},
		{"pgstat with the cluster", func(o *options) { o.pgstat, o.brokers = true, []string{"kfake", "cluster:2"} }, "-pgstat with -cluster"},
		{"pairs out of range", func(o *options) { o.sweep = []int{91} }, "-pairs 91: want 1 to 90"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.edit(&o)
			err := o.validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("validate: %v, want %q", err, c.want)
			}
		})
	}
}

func TestSchedulesSpreadThePairsOverOnePeriod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := schedules(t0, 4, 2000) // 500 orders/s a pair: a cycle of two every 4 ms
	if len(s) != 4 {
		t.Fatalf("%d schedules", len(s))
	}
	for i, sc := range s {
		if sc.period != 4*time.Millisecond || !sc.start.Equal(t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Errorf("pair %d: start +%s period %s, want +%dms and 4ms", i, sc.start.Sub(t0), sc.period, i)
		}
	}
	for _, sc := range schedules(t0, 3, 0) {
		if sc.period != 0 {
			t.Errorf("rate 0: period %s, want the closed loop", sc.period)
		}
	}
}

func TestNextCycle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := schedule{start: t0, period: 10 * time.Millisecond}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		name   string
		k      int64
		now    time.Time
		wantK  int64
		wantAt time.Time
	}{
		{"early: wait for the cycle's time", 0, t0.Add(-time.Millisecond), 0, t0},
		{"on time", 3, ms(30), 3, ms(30)},
		{"ahead of cycle 3: wait", 3, ms(25), 3, ms(30)},
		{"late by less than a period: at once", 3, ms(37), 3, ms(37)},
		{"late by a period: drop one, send the latest due at once", 3, ms(40), 4, ms(40)},
		{"late by 3.5 periods: send only the latest due", 3, ms(65), 6, ms(65)},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, at := nextCycle(s, c.k, c.now)
			if k != c.wantK || !at.Equal(c.wantAt) {
				t.Fatalf("cycle %d at +%s, want %d at +%s", k, at.Sub(t0), c.wantK, c.wantAt.Sub(t0))
			}
			// The cycle after it is never already due: a late pair sends
			// one cycle at once, not a burst.
			if next := s.start.Add(time.Duration(k+1) * s.period); !next.After(c.now) {
				t.Fatalf("cycle %d is due at +%s, before now +%s: a burst", k+1, next.Sub(t0), c.now.Sub(t0))
			}
		})
	}
}

func TestGoalLines(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	results := []summary{
		{kafka: "kfake", wait: "200ms", pairs: 16, ordersPerS: 1600, cpu: us(500), bareCPU: us(90), bareOrdersPerS: 9000,
			toLedger: loadtest.Dist{N: 10, P99: ms(60)}, toSocket: loadtest.Dist{N: 10, P50: ms(1), P99: ms(9)}},
		{kafka: "kfake", wait: "200ms", pairs: 64, ordersPerS: 2700, cpu: us(340), bareCPU: us(80), bareOrdersPerS: 12000,
			toLedger: loadtest.Dist{N: 10, P99: ms(150)}, toSocket: loadtest.Dist{N: 10, P50: ms(2), P99: ms(30)}},
		{kafka: "kfake", wait: "200ms", pairs: 64, rate: 2000, ordersPerS: 1990, cpu: us(360),
			toLedger: loadtest.Dist{N: 10, P99: ms(90)}, toSocket: loadtest.Dist{N: 10, P50: ms(0.5), P99: ms(12)}},
		{kafka: "apache", wait: "0", pairs: 32, ordersPerS: 900, cpu: us(1500),
			toLedger: loadtest.Dist{N: 10, P99: ms(400)}, toSocket: loadtest.Dist{N: 10, P50: ms(100), P99: ms(300)}},
		{kafka: "apache", wait: "0", pairs: 32, rate: 2000, ordersPerS: 1100, cpu: us(1400),
			toLedger: loadtest.Dist{N: 10, P99: ms(300)}, toSocket: loadtest.Dist{N: 10, P50: ms(5), P99: ms(15)}},
	}
	lines := goalLines(results)
	want := []string{
		"kfake    wait 200ms  CPU an order at 64 pairs: 340µs, goal <= 350µs: met; baseline: bare gin handler 80µs an order in this process",
		"kfake    wait 200ms  highest orders/s with answer -> ledger p99 <= 100ms: 1600 at 16 pairs, goal >= 3000: NOT met; baseline: bare gin handler 9000 orders/s",
		"kfake    wait 200ms  answer -> WS fill p99 at 2000 orders/s: p50/p99 500µs / 12ms at 1990 orders/s achieved, goal <= 20ms: met; baseline: closed loop at 64 pairs 2ms / 30ms at 2700 orders/s",
		"apache   wait 0      CPU an order at 32 pairs (no 64 in -pairs): 1.5ms, goal <= 350µs: NOT met; baseline: none (-baseline 0)",
		"apache   wait 0      highest orders/s with answer -> ledger p99 <= 100ms: none within it, goal >= 3000: NOT met",
		"apache   wait 0      answer -> WS fill p99 at 2000 orders/s: p50/p99 5ms / 15ms at 1100 orders/s achieved (NOT at the target), goal <= 20ms: NOT met; baseline: closed loop at 32 pairs 100ms / 300ms at 900 orders/s",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("goal lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got := goalLines(results[:2]); !strings.Contains(got[2], "not measured (-rate 0)") {
		t.Fatalf("without a paced run: %q", got[2])
	}
}

func TestShortStatement(t *testing.T) {
	q := "INSERT INTO postings (entry_id,\n\t\taccount_id,   token_id)\n  VALUES ($1, $2, $3)"
	if got, want := shortStatement(q), "INSERT INTO postings (entry_id, account_id, token_id) VALUES ($1, $2, $3)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	long := strings.Repeat("é", 150)
	if got := shortStatement(long); got != strings.Repeat("é", 100) {
		t.Fatalf("%d runes, want the first 100", len([]rune(got)))
	}
}

// A profile written with the stage labels of the stack sums by stage, the
// unlabelled samples apart, and the budget lists every stage in order.
func TestProfileStages(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "main.f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	sample := func(ns int64, stage string) *profile.Sample {
		s := &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, ns}}
		if stage != "" {
			s.Label = map[string][]string{devstack.StageLabel: {stage}}
		}
		return s
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{sample(10e6, devstack.StageIngress), sample(20e6, devstack.StageIngress), sample(5e6, devstack.StageSettler),
			sample(7e6, ""), sample(3e6, "mystery")},
		Location: []*profile.Location{loc}, Function: []*profile.Function{fn}, PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1e7,
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	sums, err := profileStages(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if sums[devstack.StageIngress] != 30*time.Millisecond || sums[devstack.StageSettler] != 5*time.Millisecond || sums[""] != 7*time.Millisecond {
		t.Fatalf("sums %v", sums)
	}
	budget := stageBudget(sums)
	var names []string
	for _, s := range budget {
		names = append(names, s.name)
	}
	want := []string{"ingress (HTTP order entry)", "matcher", "settler", "query-api (feeds, WebSocket, REST)", "orderflow relay",
		"embedded broker (kfake)", "tradebench clients and watchers", "mystery", "other/unlabelled (GC, runtime)"}
	if !slices.Equal(names, want) {
		t.Fatalf("budget order %v, want %v", names, want)
	}
	if budget[1].cpu != 0 || budget[7].cpu != 3*time.Millisecond || budget[8].cpu != 7*time.Millisecond {
		t.Fatalf("budget %+v", budget)
	}
	if _, err := profileStages(strings.NewReader("not a profile")); err == nil {
		t.Fatal("a file that is no profile: no error")
	}
}
