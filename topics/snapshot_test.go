package topics

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestMatcherSnapshotRoundTrip(t *testing.T) {
	s := MatcherSnapshot{Slot: 11000000, Offset: 4711, Part: 1, Parts: 3, State: []byte("gzip")}
	b := encodeSnapshot(t, s)
	want := `{"type":"matcher.snapshot","version":2,"id":"snapshot:11000000:4711:1","time":1738824000000,"data":{"slot":11000000,"offset":4711,"part":1,"parts":3,"state":"Z3ppcA=="}}`
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
	if back.Slot != s.Slot || back.Offset != s.Offset || back.Part != 1 || back.Parts != 3 || !bytes.Equal(back.State, s.State) {
		t.Fatalf("decoded %+v", back)
	}
	for _, bad := range []string{
		`{"slot":1,"offset":-1,"part":0,"parts":1,"state":"eA=="}`,
		`{"slot":1,"offset":1,"part":0,"parts":1}`,
		`{"slot":1,"offset":1,"part":0,"parts":0,"state":"eA=="}`,
		`{"slot":1,"offset":1,"part":1,"parts":1,"state":"eA=="}`,
		`{"slot":1,"offset":1,"part":0,"parts":1,"state":{}}`,
	} {
		if _, err := DecodeMatcherSnapshot(Envelope{Type: TypeMatcherSnapshot, Version: 2, Data: []byte(bad)}); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	old := Envelope{Type: TypeMatcherSnapshot, Version: 1, Data: []byte(`{"slot":1,"offset":1,"state":{"slot":1}}`)}
	if _, err := DecodeMatcherSnapshot(old); err == nil {
		t.Error("a version 1 snapshot decoded")
	}
}

func encodeSnapshot(t *testing.T, s MatcherSnapshot) []byte {
	t.Helper()
	e, err := s.Envelope(time.UnixMilli(1738824000000))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMatcherSnapshotKey(t *testing.T) {
	for _, c := range []struct {
		part int
		want string
	}{{0, "11000000"}, {1, "11000000/1"}, {12, "11000000/12"}} {
		if got := string(MatcherSnapshotKey(11000000, c.part)); got != c.want {
			t.Errorf("part %d: key %q, want %q", c.part, got, c.want)
		}
	}
}

// snapshotState returns n bytes of JSON-like text that compresses about as
// well as a matcher state: repeated member names, varying numbers.
func snapshotState(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for len(b) < n {
		b = fmt.Appendf(b, `{"cmd":{"orderId":%d,"userId":%d,"accountId":%d,"side":%t,"quantity":"%d","price":"0.0000000%02d"},"qty":%d},`,
			rng.Int64N(1e9), rng.IntN(1e6), rng.IntN(1e7), rng.IntN(2) == 0, rng.IntN(1e6), rng.IntN(100), rng.IntN(1e6))
	}
	return b[:n]
}

// A state of any size splits into parts whose records stay far below the
// 1 MB a broker and franz-go accept, and the parts join back into the
// state; parts that are not one whole snapshot do not join.
func TestSplitAndJoinMatcherSnapshot(t *testing.T) {
	const partBytes = 384 << 10
	for _, size := range []int{1, 1000, 6 << 20} {
		state := snapshotState(size)
		parts, err := SplitMatcherSnapshot(77, 4711, state, partBytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			b := encodeSnapshot(t, p)
			if len(b) > 600_000 {
				t.Fatalf("%d-byte state: part %d of %d is a %d-byte record", size, p.Part, p.Parts, len(b))
			}
			d, err := Decode(b)
			if err == nil {
				_, err = DecodeMatcherSnapshot(d)
			}
			if err != nil {
				t.Fatalf("part %d: %v", p.Part, err)
			}
		}
		if size >= 6<<20 && len(parts) < 3 {
			t.Fatalf("a %d-byte state fits one part", size)
		}
		back, err := JoinMatcherSnapshot(parts)
		if err != nil || !bytes.Equal(back, state) {
			t.Fatalf("%d-byte state in %d parts joined into %d bytes: %v", size, len(parts), len(back), err)
		}
	}

	parts, err := SplitMatcherSnapshot(77, 4711, snapshotState(100_000), 4096)
	if err != nil || len(parts) < 4 {
		t.Fatalf("%d parts, %v", len(parts), err)
	}
	other, _ := SplitMatcherSnapshot(77, 4800, snapshotState(100_000), 4096)
	for name, bad := range map[string][]MatcherSnapshot{
		"none":            nil,
		"one missing":     slices.Delete(slices.Clone(parts), 2, 3),
		"last missing":    parts[:len(parts)-1],
		"out of order":    append([]MatcherSnapshot{parts[1], parts[0]}, parts[2:]...),
		"another offset":  append(slices.Clone(parts[:2]), other[2:len(parts)]...),
		"bytes corrupted": corruptPart(parts, 1),
	} {
		if _, err := JoinMatcherSnapshot(bad); err == nil {
			t.Errorf("%s: joined", name)
		}
	}
	if _, err := SplitMatcherSnapshot(77, 1, []byte("{}"), 0); err == nil {
		t.Error("split into parts of 0 bytes")
	}
}

func corruptPart(parts []MatcherSnapshot, i int) []MatcherSnapshot {
	out := slices.Clone(parts)
	state := slices.Clone(out[i].State)
	state[len(state)/2] ^= 0xff
	out[i].State = state
	return out
}
