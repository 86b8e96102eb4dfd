package topics

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecodeEnvelope feeds outside bytes to Decode. Decode must never panic,
// and whatever it accepts must encode and decode back to the same envelope,
// so a record re-published by any service keeps its meaning.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, b := range goldenEnvelopes(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"type":"a.b","version":1,"id":"x","time":0,"data":{"k":[1,2,{"z":null}]}}`))
	f.Add([]byte(`{"type":"a.b","type":"a.c","version":1,"id":"x","time":0,"data":{}}`))
	f.Add([]byte(`{"type":"a.b","version":1e0,"id":"x","time":0,"data":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		enc, err := Encode(e)
		if err != nil {
			t.Fatalf("Encode of decoded %+v: %v", e, err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of %s: %v", enc, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip changed the envelope\nfirst  %+v\nsecond %+v", e, back)
		}
		again, err := Encode(back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable: %s vs %s (%v)", enc, again, err)
		}
	})
}

// FuzzDecodeCompact holds the compact reader to the strict one: whatever
// decodeCompact reads, decodeStrict reads to the same envelope.
func FuzzDecodeCompact(f *testing.F) {
	for _, b := range goldenEnvelopes(f) {
		f.Add(b)
		if e, err := Decode(b); err == nil {
			if enc, err := Encode(e); err == nil {
				f.Add(enc)
			}
		}
	}
	for _, s := range compactCases {
		f.Add([]byte(s.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeCompact(b)
		if !ok {
			return
		}
		strict, err := decodeStrict(b)
		if err != nil {
			t.Fatalf("compact read %q, strict refused it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("the readers disagree on %q\ncompact %+v\nstrict  %+v", b, fast, strict)
		}
	})
}

// goldenEnvelopes returns the files of testdata, the fuzz tests' seeds.
func goldenEnvelopes(f *testing.F) [][]byte {
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzEncodeData holds Encode's shortcut for compact data to the general
// path: for any data, both give the same bytes or both refuse it.
func FuzzEncodeData(f *testing.F) {
	for _, s := range compactCases {
		f.Add([]byte(s.in))
	}
	f.Add([]byte(`{"a": [1, 2]}`))
	f.Add([]byte(`{"a":1}{}`))
	f.Add([]byte(`{"a":"\u00e9"} `))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := Envelope{Type: "a.b", Version: 1, ID: "x", Data: data}
		got, err := Encode(e)
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		if len(trimmed) == 0 || trimmed[0] != '{' {
			if err == nil {
				t.Fatalf("Encode took data %q that is not an object", data)
			}
			return
		}
		want, wantErr := encodeData(AppendEnvelopeHead(nil, e.Type, e.Version, e.ID, e.Time), trimmed)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("data %q: Encode %q (%v), general path %q (%v)", data, got, err, want, wantErr)
		}
		if (validateData(data) == nil) != (wantErr == nil) {
			t.Fatalf("data %q: validateData %v, Compact %v", data, validateData(data), wantErr)
		}
	})
}

// TestHasNUL: only an escape that is not itself escaped writes a NUL.
func TestHasNUL(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":"x"}`:             false,
		`{"a":"\u0000"}`:        true,
		`{"a":"\\u0000"}`:       false,
		`{"a":"\\\u0000"}`:      true,
		`{"a":"\\\\u0000"}`:     false,
		`{"a":"x\u00001"}`:      true,
		`{"a":"\\u0000\u0000"}`: true,
	} {
		if got := HasNUL([]byte(in)); got != want {
			t.Errorf("HasNUL(%s) = %t, want %t", in, got, want)
		}
	}
}
