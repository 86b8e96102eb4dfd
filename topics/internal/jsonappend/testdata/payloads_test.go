package topics

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

var strange = []string{"", "plain", `q"uote`, `back\slash`, "<&>", "tab\there", "\x00\x1f", "é", "\u2028", "bad\xffutf8"}

// randomize is the one of topics/codec_gen_test.go, repeated because this
// file is compiled in a module of its own, with the helpers only.
func randomize(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strange[rng.IntN(len(strange))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rng.IntN(4) > 0 {
			v.SetInt(int64(rng.Uint64()) >> (64 - v.Type().Bits()))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rng.IntN(4) > 0 {
			v.SetUint(rng.Uint64() >> (64 - v.Type().Bits()))
		}
	case reflect.Pointer:
		if rng.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			randomize(rng, v.Elem())
		}
	case reflect.Slice:
		if n := rng.IntN(4) - 1; n >= 0 {
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				randomize(rng, v.Index(i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomize(rng, v.Field(i))
			}
		}
	}
}

func TestAppendJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range []interface{ AppendJSON([]byte) []byte }{&AllOptional{}, &LeadingOptional{}, &Marked{}, &Shapes{}} {
		v := reflect.ValueOf(a).Elem()
		for range 2000 {
			v.SetZero()
			randomize(rng, v)
			want, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.AppendJSON(nil); !bytes.Equal(got, want) {
				t.Fatalf("%T\n got %s\nwant %s", a, got, want)
			}
		}
	}
}

func TestReadJSON(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"i8":-128,"i16":32767,"i32":-2147483648,"u8":255,"u16":65535,"u64":18446744073709551615,"lv":7,"lb":"x","fl":true,"a<b&c>":"e","-":"d","Untagged":"u"}`, true},
		{`{"i8":128}`, false},
		{`{"i8":-129}`, false},
		{`{"u8":256}`, false},
		{`{"u16":-1}`, false},
		{`{"u64":18446744073709551616}`, false},
		{`{"lv":-129}`, false},
		{`{"ptr":1}`, true},
		{`{"ptr":null,"ptrLabel":"l"}`, true},
		{`{"ptrLabel":null}`, true},
		{`{"ptr":nul}`, false},
		{`{"ptr":"1"}`, false},
		{`{"ptr":1,"ptr":null}`, false},
		{`{"labels":[]}`, false},
		{`{"Skipped":"s"}`, false},
		{`{"unexp":"s"}`, false},
	} {
		var got Shapes
		ok := got.ReadJSON([]byte(c.in))
		if ok != c.ok {
			t.Errorf("%s: read %t, want %t", c.in, ok, c.ok)
			continue
		}
		var want Shapes
		if err := json.Unmarshal([]byte(c.in), &want); ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("%s: read %+v, json.Unmarshal %+v (%v)", c.in, got, want, err)
		}
	}
}
