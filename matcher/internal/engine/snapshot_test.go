package engine

import (
	"bytes"
	"testing"

	"blockspace.exchange/topics"
)

// copyBySnapshot returns a new engine holding e's slots, restored from
// their snapshots.
func copyBySnapshot(t *testing.T, e *Engine) *Engine {
	t.Helper()
	c := New()
	for _, n := range e.Slots() {
		state, ok, err := e.SnapshotSlot(n)
		if err != nil || !ok {
			t.Fatalf("snapshot slot %d: %v %v", n, ok, err)
		}
		if err := c.RestoreSlot(state); err != nil {
			t.Fatal(err)
		}
		again, _, err := c.SnapshotSlot(n)
		if err != nil || !bytes.Equal(again, state) {
			t.Fatalf("slot %d: the restored state snapshots differently (%v)\n%s\n%s", n, err, state, again)
		}
	}
	return c
}

// An engine restored from snapshots taken at any point goes on exactly as
// the engine that took them: the same outputs, byte for byte.
func TestSnapshotRestoreContinuesIdentically(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		envs := randomStream(t, seed, 2500)
		h := &harness{t: t}
		for _, k := range []topics.TickKind{topics.TickFinalized} {
			envs = append(envs, h.envelope(topics.ClockTick{Slot: testSlot, Kind: k}))
		}
		for _, cut := range []int{0, 3, 700, 1800, len(envs) - 2, len(envs)} {
			original := New()
			applyAll(t, original, envs[:cut])
			restored := copyBySnapshot(t, original)
			want := applyAll(t, original, envs[cut:])
			got := applyAll(t, restored, envs[cut:])
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d cut %d: outputs differ at byte %d", seed, cut, firstDiff(got, want))
			}
		}
	}
}

func TestRestoreRejectsBrokenState(t *testing.T) {
	for name, state := range map[string]string{
		"not json":       `{`,
		"bad family":     `{"slot":1,"markets":[{"family":"x","status":1}]}`,
		"order nowhere":  `{"slot":1,"orders":[{"cmd":{"orderId":1},"family":"wholeblock"}]}`,
		"bad fee":        `{"slot":1,"fees":["2","",""]}`,
		"bad book order": `{"slot":1,"markets":[{"family":"wholeblock","status":1,"open":{"slot":1,"family":"wholeblock","priceStep":"0.01","minPrice":"0.01","maxPrice":"1"},"book":[{"ID":1,"Side":9,"Qty":1}]}]}`,
	} {
		if err := New().RestoreSlot([]byte(state)); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}
