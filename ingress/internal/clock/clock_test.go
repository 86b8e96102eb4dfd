package clock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

type recorder struct {
	mu   sync.Mutex
	recs []*kgo.Record
	fail bool
}

func (r *recorder) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return kgo.ProduceResults{{Err: errors.New("broker down")}}
	}
	r.recs = append(r.recs, rs...)
	return nil
}

func (r *recorder) ids(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, rec := range r.recs {
		e, err := kafka.DecodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.ID)
	}
	return out
}

// evenSlots sells every even slot; odd slots have no registered proposer.
type evenSlots struct{}

func (evenSlots) Seller(_ context.Context, slot uint64) (Seller, bool, error) {
	if slot%2 == 1 {
		return Seller{}, false, nil
	}
	return Seller{UserID: 7, AccountID: 70, Pubkey: "0xb1", CollateralPerSlot: "1.5"}, true, nil
}

var genesis = time.Unix(1_700_000_000, 0)

func testClock(t *testing.T, out Producer, start time.Time) *Clock {
	t.Helper()
	env := environment.Environment{Name: "dev", Genesis: genesis, SlotLength: 12 * time.Second}
	layout, _ := topics.DefaultLayout(topics.Orders)
	c, err := New(Config{
		Env: env, Params: DefaultParams(), Lookback: time.Nanosecond,
		Layout: func(context.Context) (topics.SlotLayout, error) { return layout, nil },
		Now:    func() time.Time { return start },
	}, evenSlots{}, out)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEventsOfASlotFollowDecisions(t *testing.T) {
	out := &recorder{}
	block100 := genesis.Add(100 * 12 * time.Second)
	c := testClock(t, out, block100.Add(-time.Millisecond))
	for _, to := range []time.Time{block100, block100.Add(768 * time.Second)} {
		if err := c.Advance(context.Background(), to); err != nil {
			t.Fatal(err)
		}
	}
	at := map[string]int64{}
	var duties []topics.ProposerDuty
	for _, rec := range out.recs {
		e, _ := kafka.DecodeRecord(rec)
		at[e.ID] = e.Time
		if rec.Topic == topics.Validators {
			d, err := topics.DecodeProposerDuty(e)
			if err != nil || string(rec.Key) != d.Pubkey {
				t.Fatalf("duty %+v key %s: %v", d, rec.Key, err)
			}
			duties = append(duties, d)
			continue
		}
		if rec.Topic != topics.Orders || rec.Partition != int32(slotOf(t, rec)%16) {
			t.Fatalf("%s on partition %d", e.ID, rec.Partition)
		}
	}
	ms := func(d time.Duration) int64 { return block100.Add(d).UnixMilli() }
	want := map[string]int64{
		"market_open:164:wholeblock":        ms(0),
		"market_open:132:inclusion-preconf": ms(0),
		"tick:100:trading_closed":           -1, // before the start
		"tick:101:trading_closed":           ms(12*time.Second - 4*time.Second),
		"tick:101:submission_closed":        ms(12*time.Second - 2*time.Second),
		"tick:100:finalized":                ms(768 * time.Second),
	}
	for id, w := range want {
		got, ok := at[id]
		if w == -1 {
			if ok {
				t.Errorf("%s published though due before the start", id)
			}
			continue
		}
		if !ok || got != w {
			t.Errorf("%s at %d (published %v), want %d", id, got, ok, w)
		}
	}
	if _, ok := at["market_open:165:wholeblock"]; ok {
		t.Error("slot 165 has no registered proposer but its market opened")
	}
	// The proposer duty goes with each whole-block open, once per sold
	// slot, at the open's time.
	wantDuty := topics.ProposerDuty{Slot: 164, Epoch: 5, Pubkey: "0xb1", UserID: 7, AccountID: 70}
	if duties[0] != wantDuty || at["proposer_duty:164"] != ms(0) {
		t.Errorf("first duty %+v at %d, want %+v at %d", duties[0], at["proposer_duty:164"], wantDuty, ms(0))
	}
	opens := 0
	for id := range at {
		if strings.HasSuffix(id, ":wholeblock") {
			opens++
		}
	}
	seen := map[uint64]bool{}
	for _, d := range duties {
		open, ok := at[fmt.Sprintf("market_open:%d:wholeblock", d.Slot)]
		if d.Slot%2 == 1 || seen[d.Slot] || !ok || open != at[fmt.Sprintf("proposer_duty:%d", d.Slot)] {
			t.Errorf("duty %+v: odd slot, repeated, or not at its market's open", d)
		}
		seen[d.Slot] = true
	}
	if len(duties) != opens {
		t.Errorf("%d duties for %d whole-block opens", len(duties), opens)
	}
}

func slotOf(t *testing.T, r *kgo.Record) uint64 {
	s, err := topics.ParseSlotKey(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A clock that pauses publishes afterwards exactly what a clock that ran
// through the pause published, except market opens whose trading closed.
func TestCatchUpAfterAPauseSkipsNoTick(t *testing.T) {
	start := genesis.Add(1000 * 12 * time.Second)
	steady, paused := &recorder{}, &recorder{}
	a, b := testClock(t, steady, start), testClock(t, paused, start)
	ctx := context.Background()
	for i := 1; i <= 300; i++ {
		if err := a.Advance(ctx, start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	paused.fail = true
	if err := b.Advance(ctx, start.Add(100*time.Second)); err == nil {
		t.Fatal("Advance succeeded with the broker down")
	}
	paused.fail = false
	if err := b.Advance(ctx, start.Add(300*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, id := range paused.ids(t) {
		got[id] = true
	}
	for _, id := range steady.ids(t) {
		if !got[id] && id[:4] == "tick" {
			t.Errorf("tick %s missing after the pause", id)
		}
	}
	if len(got) == 0 {
		t.Fatal("nothing published")
	}
}

// lateRegistration sells slot 164 only from registeredAt on.
type lateRegistration struct {
	mu         sync.Mutex
	registered bool
	asked      int
}

func (l *lateRegistration) Seller(_ context.Context, slot uint64) (Seller, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked++
	if slot != 164 || !l.registered {
		return Seller{}, false, nil
	}
	return Seller{UserID: 7, AccountID: 70, Pubkey: "0xb1", CollateralPerSlot: "1"}, true, nil
}

// A proposer that registers after its slot's open instant, before the
// slot's maturity, gets the market, with the envelope time of the open
// instant; a clock started later (a restarted replica) publishes the
// same record. After maturity nothing opens.
func TestMarketOpensForAProposerRegisteredLate(t *testing.T) {
	block100 := genesis.Add(100 * 12 * time.Second)
	env := environment.Environment{Name: "dev", Genesis: genesis, SlotLength: 12 * time.Second}
	layout, _ := topics.DefaultLayout(topics.Orders)
	newClock := func(out Producer, s Sellers, start time.Time) *Clock {
		c, err := New(Config{Env: env, Params: DefaultParams(), Lookback: 70 * 12 * time.Second,
			Layout: func(context.Context) (topics.SlotLayout, error) { return layout, nil },
			Now:    func() time.Time { return start }}, s, out)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	sellers := &lateRegistration{}
	out := &recorder{}
	running := newClock(out, sellers, block100.Add(-time.Millisecond))
	opened := func(r *recorder) (int64, bool) {
		for _, rec := range r.recs {
			e, _ := kafka.DecodeRecord(rec)
			if e.ID == "market_open:164:wholeblock" {
				return e.Time, true
			}
		}
		return 0, false
	}
	if err := running.Advance(ctx, block100.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok := opened(out); ok {
		t.Fatal("opened before the proposer registered")
	}
	sellers.mu.Lock()
	sellers.registered = true
	sellers.mu.Unlock()
	if err := running.Advance(ctx, block100.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	at, ok := opened(out)
	if !ok || at != block100.UnixMilli() {
		t.Fatalf("market of slot 164 opened %t at %d, want at the open instant %d", ok, at, block100.UnixMilli())
	}
	restarted := &recorder{}
	if err := newClock(restarted, sellers, block100.Add(6*time.Second)).Advance(ctx, block100.Add(7*time.Second)); err != nil {
		t.Fatal(err)
	}
	if at2, ok := opened(restarted); !ok || at2 != at {
		t.Fatalf("a restarted clock published the open %t at %d, want the same record at %d", ok, at2, at)
	}

	// Past slot 164's maturity nothing opens, registered or not, and the
	// clock stops asking.
	late := &lateRegistration{}
	out = &recorder{}
	c := newClock(out, late, block100.Add(-time.Millisecond))
	maturity := env.Times(164).Maturity
	if err := c.Advance(ctx, maturity); err != nil {
		t.Fatal(err)
	}
	late.mu.Lock()
	late.registered = true
	late.mu.Unlock()
	if err := c.Advance(ctx, maturity.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok := opened(out); ok {
		t.Fatal("opened after maturity")
	}
	if _, ok := c.pending[openKey{164, topics.WholeBlock}]; ok {
		t.Fatal("slot 164 still pending after its maturity")
	}
}
