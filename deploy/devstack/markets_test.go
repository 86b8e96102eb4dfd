package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

type listedMarket struct {
	Slot          uint64 `json:"slot"`
	Status        int    `json:"status"`
	MaturityTime  int64  `json:"maturityTime"`
	TrxSubmitTime int64  `json:"trxSubmitTime"`
	BlockTime     int64  `json:"blockTime"`
	FinalityTime  int64  `json:"finalityTime"`
	TotalGas      int64  `json:"totalGas"`
	// AvailablePreconf is the whole-block holder's unlocked preconf gas.
	AvailablePreconf int64 `json:"availablePreconf"`
}

func markets(t *testing.T, url string) []listedMarket {
	t.Helper()
	r := call(t, "GET", url)
	var d struct {
		Markets []listedMarket `json:"markets"`
	}
	if r.status != 200 || !r.body.Success || json.Unmarshal(r.body.Data, &d) != nil {
		t.Fatalf("GET %s: %d %+v", url, r.status, r.body)
	}
	return d.Markets
}

// TestMarketLifecycleInAcceleratedTime runs the real stack on 400 ms
// slots: the demo validator proposes every slot, so whole-block markets
// open 64 slots ahead and preconf markets 32 ahead, and one preconf market
// is followed through its statuses. The matcher's market.status events
// must be exactly 1, 2, 3 and 4, each caused by its command. The public
// read must never go back nor show a status before its time, and must
// show 1, 3 and 4; status 2 lasts a sixth of a slot (67 ms here) and is
// checked only when a read happens to fall in it, since the pipeline may
// deliver trading_closed and submission_closed in one batch.
func TestMarketLifecycleInAcceleratedTime(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "400ms"})
	env := s.cfg.Environment
	base := s.Addresses().REST

	var wb, pc []listedMarket
	poll.Until(t, "markets open 64 (whole block) and 32 (preconf) slots ahead", func() bool {
		wb = markets(t, base+"/api/v1/p/wholeblock/markets")
		pc = markets(t, base+"/api/v1/p/inclusion-preconf/markets")
		cur, _ := env.SlotAt(time.Now())
		return len(wb) > 0 && len(pc) > 0 && wb[len(wb)-1].Slot >= cur+63 && pc[len(pc)-1].Slot >= cur+31
	})
	cur, _ := env.SlotAt(time.Now())
	if last := wb[len(wb)-1].Slot; last > cur+64 {
		t.Errorf("whole-block market of slot %d is open at slot %d, beyond 64 ahead", last, cur)
	}
	if last := pc[len(pc)-1].Slot; last > cur+32 {
		t.Errorf("preconf market of slot %d is open at slot %d, beyond 32 ahead", last, cur)
	}

	// Follow the first preconf market whose trading is at least two slots away.
	var target listedMarket
	for _, m := range pc {
		if m.Status == 1 && time.UnixMilli(m.MaturityTime).After(time.Now().Add(2*env.SlotLength)) {
			target = m
			break
		}
	}
	want := env.Times(target.Slot)
	if target.Slot == 0 || target.MaturityTime != want.Maturity.UnixMilli() || target.TrxSubmitTime != want.TrxSubmit.UnixMilli() ||
		target.BlockTime != want.Block.UnixMilli() || target.FinalityTime != want.Finality.UnixMilli() || target.TotalGas != 36_000_000 {
		t.Fatalf("market %+v, want times %+v", target, want)
	}
	seen := map[int]time.Time{}
	url := fmt.Sprintf("%s/api/v1/p/inclusion-preconf/market?slot=%d", base, target.Slot)
	prev := 0
	for deadline := want.Finality.Add(20 * time.Second); time.Now().Before(deadline) && seen[4].IsZero(); {
		r := call(t, "GET", url)
		var d struct {
			Market listedMarket `json:"market"`
		}
		if r.status != 200 || !r.body.Success || json.Unmarshal(r.body.Data, &d) != nil {
			t.Fatalf("GET %s: %d %+v", url, r.status, r.body)
		}
		st := d.Market.Status
		if st < prev {
			t.Fatalf("status went back from %d to %d", prev, st)
		}
		if _, ok := seen[st]; !ok {
			seen[st] = time.Now()
		}
		prev = st
		time.Sleep(5 * time.Millisecond)
	}
	for st, after := range map[int]time.Time{2: want.Maturity, 3: want.TrxSubmit, 4: want.Finality} {
		if seen[st].IsZero() {
			if st != 2 {
				t.Errorf("status %d never read (seen %v)", st, seen)
			}
		} else if seen[st].Before(after) {
			t.Errorf("status %d read at %s, before its time %s", st, seen[st].Format(time.StampMilli), after.Format(time.StampMilli))
		}
	}
	if !seen[1].Before(want.Maturity) {
		t.Errorf("status 1 first read at %s, not before maturity", seen[1])
	}

	// The matcher reported exactly 1, 2, 3, 4 for the slot, caused by the
	// market.open and the three ticks. The public read showed 4, so the
	// matcher had committed the last of them.
	statuses := marketStatuses(t, s, topics.InstrumentID(topics.InclusionPreconf, target.Slot))
	wantIDs := []string{
		fmt.Sprintf("market_open:%d:inclusion-preconf", target.Slot),
		fmt.Sprintf("tick:%d:trading_closed", target.Slot),
		fmt.Sprintf("tick:%d:submission_closed", target.Slot),
		fmt.Sprintf("tick:%d:finalized", target.Slot),
	}
	if len(statuses) != 4 {
		t.Fatalf("market.status events %+v, want 4", statuses)
	}
	for i, st := range statuses {
		if st.Status != i+1 || st.CommandID != wantIDs[i] {
			t.Errorf("event %d: status %d by %s, want %d by %s", i, st.Status, st.CommandID, i+1, wantIDs[i])
		}
	}

	if r := call(t, "GET", base+"/api/v1/p/inclusion-preconf/market?slot=1"); r.status != 200 || r.body.Success || r.body.Code != 114 {
		t.Errorf("slot without market: %d %+v", r.status, r.body)
	}
	if r := call(t, "GET", base+"/api/v1/p/inclusion-preconf/market?slot=x"); r.status != 400 || r.body.Code != 1001 {
		t.Errorf("bad slot: %d %+v", r.status, r.body)
	}
}

// marketStatuses returns the market.status events of instrument among
// the order events the broker holds now, read up to its end offsets.
func marketStatuses(t *testing.T, s *running, instrument string) []topics.MarketStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out []topics.MarketStatus
	for _, r := range kafkatest.ReadToEnd(ctx, t, s.kcl, topics.OrderEvents) {
		e, err := kafka.DecodeRecord(r)
		if err != nil || e.Type != topics.TypeMarketStatus {
			continue
		}
		var st topics.MarketStatus
		if e.UnmarshalData(&st) == nil && st.InstrumentID == instrument {
			out = append(out, st)
		}
	}
	return out
}
