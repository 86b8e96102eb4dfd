package engine

import (
	"bytes"
	"fmt"
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
		"not json":          `{`,
		"bad family":        `{"slot":1,"markets":[{"family":"x","status":1}]}`,
		"done nowhere":      `{"slot":1,"done":[{"account":1,"family":"wholeblock","ids":[1]}]}`,
		"done twice":        `{"slot":1,"done":[{"account":1,"ids":[1]},{"account":2,"ids":[1]}]}`,
		"live when freed":   `{"slot":1,"markets":[{"family":"wholeblock","status":1,"orders":[{"cmd":{"orderId":1,"side":true},"price":1,"qty":1}]}]}`,
		"live and done":     `{"slot":1,"markets":[{"family":"wholeblock","status":1,"open":{"slot":1,"family":"wholeblock","priceStep":"0.01","minPrice":"0.01","maxPrice":"1","sellerUserId":1,"sellerAccountId":2},"orders":[{"cmd":{"orderId":1,"side":true},"price":1,"qty":1}]}],"done":[{"account":1,"ids":[1]}]}`,
		"bad fee":           `{"slot":1,"fees":["2","",""]}`,
		"filled live order": `{"slot":1,"markets":[{"family":"wholeblock","status":1,"open":{"slot":1,"family":"wholeblock","priceStep":"0.01","minPrice":"0.01","maxPrice":"1","sellerUserId":1,"sellerAccountId":2},"orders":[{"cmd":{"orderId":1,"side":true},"price":1,"qty":1,"filled":1}]}]}`,
	} {
		if err := New().RestoreSlot([]byte(state)); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// largeSlotStream returns the inputs of one slot whose markets decide n
// orders of three accounts: resting, trading, self-trading, passive orders
// rejected for crossing and orders rejected for their price, with cancels
// of live, done and unknown orders and republished commands in between.
func largeSlotStream(t *testing.T, n int) []topics.Envelope {
	t.Helper()
	h := &harness{t: t}
	envs := []topics.Envelope{h.envelope(marketOpen(testSlot, topics.WholeBlock)), h.envelope(marketOpen(testSlot, topics.InclusionPreconf))}
	accounts := []int64{seller, alice, bob}
	for i := range n {
		id := int64(i + 1)
		acct := accounts[i%3]
		o := buy(id, acct, inclusionID, fmt.Sprint(21000+1000*(i%50)), fmt.Sprintf("0.00000000%d", 1+i%9))
		o.Side = i%3 != 0
		switch {
		case i%11 == 0:
			o = passive(o)
		case i%13 == 0:
			o.Price = "0.0000000015" // off the price step: rejected
		case i%17 == 0:
			o = client(o, fmt.Sprintf("c%d", i%5))
		}
		envs = append(envs, h.envelope(o))
		if i%7 == 6 {
			envs = append(envs, h.envelope(topics.OrderCancel{UserID: userOf(acct), AccountID: acct, InstrumentID: inclusionID, OrderID: id - int64(i%20)}))
		}
		if i%10 == 9 {
			envs = append(envs, envs[len(envs)-1])
		}
	}
	return envs
}

// A slot that decided 50,000 orders snapshots and restores like any
// other: the restored engine answers every later command as the original
// does, late cancels of done orders included.
func TestSnapshotOfALargeSlot(t *testing.T) {
	const orders = 50_000
	envs := largeSlotStream(t, orders)
	original := New()
	for _, env := range envs {
		if _, err := original.Apply(env); err != nil {
			t.Fatal(err)
		}
	}
	restored := copyBySnapshot(t, original)
	state, _, _ := original.SnapshotSlot(testSlot)
	t.Logf("%d orders decided, %d of them live: a state of %d bytes",
		orders, len(original.slots[testSlot].orders), len(state))
	if len(original.slots[testSlot].done) < orders/3 || len(original.slots[testSlot].orders) < 1000 {
		t.Fatalf("the slot has %d done and %d live orders", len(original.slots[testSlot].done), len(original.slots[testSlot].orders))
	}

	h := &harness{t: t, seq: len(envs) + 10}
	var tail []topics.Envelope
	for id := int64(1); id <= orders+2; id += 97 {
		for _, acct := range []int64{seller, alice, bob} {
			tail = append(tail, h.envelope(topics.OrderCancel{UserID: userOf(acct), AccountID: acct, InstrumentID: inclusionID, OrderID: id}))
		}
		tail = append(tail, h.envelope(buy(id, alice, inclusionID, "21000", "0.000000005")))
	}
	tail = append(tail, envs[len(envs)/2], h.envelope(tick(topics.TickTradingClosed)))
	want := applyAll(t, original, tail)
	got := applyAll(t, restored, tail)
	if !bytes.Equal(got, want) {
		t.Fatalf("outputs differ at byte %d", firstDiff(got, want))
	}
	if !bytes.Contains(want, []byte(`"code":109`)) || !bytes.Contains(want, []byte(`"code":108`)) || !bytes.Contains(want, []byte("order.expired")) {
		t.Fatal("the commands after the snapshot miss a kind of answer")
	}
}
