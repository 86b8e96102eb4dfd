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
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range goldens {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
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
