package topics

import (
	"bytes"
	"testing"
	"time"
)

func TestMatcherSnapshotRoundTrip(t *testing.T) {
	s := MatcherSnapshot{Slot: 11000000, Offset: 4711, State: []byte(`{"slot":11000000,"phase":0}`)}
	e, err := s.Envelope(time.UnixMilli(1738824000000))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"matcher.snapshot","version":1,"id":"snapshot:11000000:4711","time":1738824000000,"data":{"slot":11000000,"offset":4711,"state":{"slot":11000000,"phase":0}}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMatcherSnapshot(d)
	if err != nil {
		t.Fatal(err)
	}
	if back.Slot != s.Slot || back.Offset != s.Offset || !bytes.Equal(back.State, s.State) {
		t.Fatalf("decoded %+v", back)
	}
	for _, bad := range []string{`{"slot":1,"offset":-1,"state":{}}`, `{"slot":1,"offset":1}`, `{"slot":1,"offset":1,"state":[]}`} {
		if _, err := DecodeMatcherSnapshot(Envelope{Type: TypeMatcherSnapshot, Version: 1, Data: []byte(bad)}); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
