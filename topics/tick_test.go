package topics

import (
	"strings"
	"testing"
	"time"
)

var testTime = time.UnixMilli(1738824000000)

func TestClockTickIDIsDeterministic(t *testing.T) {
	a, _ := ClockTick{Slot: 9, Kind: TickFinalized}.Envelope(testTime)
	b, _ := ClockTick{Slot: 9, Kind: TickFinalized}.Envelope(testTime.Add(time.Hour))
	c, _ := ClockTick{Slot: 9, Kind: TickMarketOpen}.Envelope(testTime)
	if a.ID != b.ID {
		t.Fatalf("the same tick got ids %q and %q", a.ID, b.ID)
	}
	if a.ID == c.ID {
		t.Fatalf("different ticks share id %q", a.ID)
	}
}

func TestClockTickRejects(t *testing.T) {
	if _, err := (ClockTick{Slot: 1, Kind: "noon"}).Envelope(testTime); err == nil {
		t.Error("Envelope accepted an unknown kind")
	}
	tests := map[string]Envelope{
		"wrong type":   {Type: TypeOrderPlace, Version: 1, ID: "x", Data: []byte(`{"slot":1,"kind":"finalized"}`)},
		"new version":  {Type: TypeClockTick, Version: 2, ID: "x", Data: []byte(`{"slot":1,"kind":"finalized"}`)},
		"missing slot": {Type: TypeClockTick, Version: 1, ID: "x", Data: []byte(`{"kind":"finalized"}`)},
		"unknown kind": {Type: TypeClockTick, Version: 1, ID: "x", Data: []byte(`{"slot":1,"kind":"noon"}`)},
		"string slot":  {Type: TypeClockTick, Version: 1, ID: "x", Data: []byte(`{"slot":"1","kind":"finalized"}`)},
	}
	for name, e := range tests {
		if tick, err := DecodeClockTick(e); err == nil || !strings.Contains(err.Error(), "decode clock tick") {
			t.Errorf("%s: got %+v, %v", name, tick, err)
		}
	}
}
