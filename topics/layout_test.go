package topics

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestLayoutPartition(t *testing.T) {
	layout := SlotLayout{Topic: Orders, Epochs: []Epoch{{0, 4}, {100, 6}, {250, 10}}}
	tests := []struct {
		name string
		slot uint64
		want int32
	}{
		{"slot 0", 0, 0},
		{"first epoch", 7, 3},
		{"last slot of first epoch", 99, 3},
		{"first slot of second epoch", 100, 4},
		{"inside second epoch", 107, 5},
		{"last slot of second epoch", 249, 3},
		{"first slot of third epoch", 250, 0},
		{"far future", 1_000_003, 3},
		{"largest slot", ^uint64(0), int32(^uint64(0) % 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := layout.Partition(tt.slot); got != tt.want {
				t.Fatalf("Partition(%d) = %d, want %d", tt.slot, got, tt.want)
			}
		})
	}
}

func TestLayoutValidate(t *testing.T) {
	tests := []struct {
		name   string
		layout SlotLayout
		want   string
	}{
		{"valid single epoch", SlotLayout{Orders, []Epoch{{0, 16}}}, ""},
		{"valid raised", SlotLayout{Orders, []Epoch{{0, 16}, {500, 16}, {900, 32}}}, ""},
		{"no topic", SlotLayout{"", []Epoch{{0, 16}}}, "missing topic"},
		{"no epochs", SlotLayout{Orders, nil}, "no epochs"},
		{"first epoch after 0", SlotLayout{Orders, []Epoch{{5, 16}}}, "not 0"},
		{"zero partitions", SlotLayout{Orders, []Epoch{{0, 0}}}, "0 partitions"},
		{"negative partitions", SlotLayout{Orders, []Epoch{{0, 16}, {10, -1}}}, "-1 partitions"},
		{"same start", SlotLayout{Orders, []Epoch{{0, 16}, {0, 32}}}, "not after"},
		{"decreasing start", SlotLayout{Orders, []Epoch{{0, 16}, {100, 32}, {50, 64}}}, "not after"},
		{"lowered partitions", SlotLayout{Orders, []Epoch{{0, 16}, {100, 8}}}, "lowers partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.layout.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate error %v, want ErrInvalidLayout mentioning %q", err, tt.want)
			}
		})
	}
}

func TestLayoutRaise(t *testing.T) {
	base := SlotLayout{Orders, []Epoch{{0, 16}}}
	tests := []struct {
		name    string
		layout  SlotLayout
		current uint64
		parts   int32
		want    []Epoch
		wantErr string
	}{
		{"appends an epoch beyond the horizon", base, 1000, 32,
			[]Epoch{{0, 16}, {1000 + MarketHorizon + LayoutMargin, 32}}, ""},
		{"same count is a no-op", base, 1000, 16, []Epoch{{0, 16}}, ""},
		{"lowering is refused", base, 1000, 8, nil, "would lower"},
		{"a pending epoch is replaced, not stacked",
			SlotLayout{Orders, []Epoch{{0, 16}, {1096, 32}}}, 1000, 64,
			[]Epoch{{0, 16}, {1096, 64}}, ""},
		{"a started epoch is kept",
			SlotLayout{Orders, []Epoch{{0, 16}, {1096, 32}}}, 2000, 64,
			[]Epoch{{0, 16}, {1096, 32}, {2096, 64}}, ""},
		{"invalid layout is refused", SlotLayout{Orders, nil}, 1, 32, nil, "no epochs"},
		{"overflowing slot is refused", base, ^uint64(0) - 10, 32, nil, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.layout.Raise(tt.current, tt.parts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Raise error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Epochs, tt.want) {
				t.Fatalf("epochs %v, want %v", got.Epochs, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("raised layout is invalid: %v", err)
			}
		})
	}
}

func TestLayoutRaiseDoesNotAliasInput(t *testing.T) {
	base := SlotLayout{Orders, make([]Epoch, 1, 4)}
	base.Epochs[0] = Epoch{0, 16}
	first, _ := base.Raise(100, 32)
	second, _ := base.Raise(500, 64)
	if first.Epochs[1] != (Epoch{196, 32}) || second.Epochs[1] != (Epoch{596, 64}) {
		t.Fatalf("raises share storage: %v and %v", first.Epochs, second.Epochs)
	}
}

// TestLayoutRaiseKeepsLiveMarkets is the property behind the rule that a
// live market never moves (docs/architecture.md "One writer per slot"): after
// any sequence of raises, no slot below the newest epoch's start changes
// partition, in particular no slot that may have a market (up to the current
// slot plus the market horizon).
func TestLayoutRaiseKeepsLiveMarkets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 500 {
		layout := SlotLayout{Orders, []Epoch{{0, int32(1 + rng.IntN(16))}}}
		current := uint64(rng.IntN(1000))
		for range 1 + rng.IntN(6) {
			current += uint64(rng.IntN(300))
			parts := layout.Partitions() + int32(rng.IntN(8))
			next, err := layout.Raise(current, parts)
			if err != nil {
				t.Fatalf("run %d: Raise(%d, %d) of %v: %v", run, current, parts, layout.Epochs, err)
			}
			if err := next.Validate(); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			fromSlot := next.Epochs[len(next.Epochs)-1].FromSlot
			changed := !reflect.DeepEqual(next, layout)
			if changed && fromSlot <= current+MarketHorizon {
				t.Fatalf("run %d: new epoch starts at %d, inside the market horizon of %d", run, fromSlot, current)
			}
			for slot := uint64(0); slot < fromSlot; slot++ {
				if before, after := layout.Partition(slot), next.Partition(slot); before != after {
					t.Fatalf("run %d: slot %d moved from partition %d to %d (raise to %d at slot %d)",
						run, slot, before, after, parts, current)
				}
			}
			for slot := fromSlot; slot < fromSlot+3*uint64(parts); slot++ {
				if p := next.Partition(slot); p < 0 || p >= parts {
					t.Fatalf("run %d: slot %d maps to partition %d of %d", run, slot, p, parts)
				}
			}
			layout = next
		}
	}
}

func TestDefaultLayout(t *testing.T) {
	l, err := DefaultLayout(Orders)
	if err != nil {
		t.Fatal(err)
	}
	orders, _ := Lookup(Orders)
	if !reflect.DeepEqual(l, SlotLayout{Orders, []Epoch{{0, orders.Partitions}}}) {
		t.Fatalf("default layout %+v", l)
	}
	for _, name := range []string{Fills, LedgerCommands, "nope"} {
		if _, err := DefaultLayout(name); err == nil {
			t.Errorf("DefaultLayout(%q) succeeded; only layout owners have one", name)
		}
	}
}

func TestDecodeLayoutRejects(t *testing.T) {
	good, err := LayoutEnvelope(SlotLayout{Orders, []Epoch{{0, 16}}}, testTime)
	if err != nil {
		t.Fatal(err)
	}
	wrongType := good
	wrongType.Type = TypeClockTick
	wrongVersion := good
	wrongVersion.Version = 2
	lowered := good
	lowered.Data = []byte(`{"topic":"orders","epochs":[{"fromSlot":0,"partitions":16},{"fromSlot":9,"partitions":4}]}`)
	for name, e := range map[string]Envelope{"type": wrongType, "version": wrongVersion, "lowered": lowered} {
		if _, err := DecodeLayout(e); err == nil {
			t.Errorf("%s: DecodeLayout accepted %s", name, e.Data)
		}
	}
	if _, err := LayoutEnvelope(SlotLayout{Orders, []Epoch{{3, 16}}}, testTime); err == nil {
		t.Error("LayoutEnvelope accepted an invalid layout")
	}
}
