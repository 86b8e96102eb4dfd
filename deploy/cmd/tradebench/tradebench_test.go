package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

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
