package topics

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// appenders are the types with a generated AppendJSON.
func appenders() []interface{ AppendJSON([]byte) []byte } {
	return []interface{ AppendJSON([]byte) []byte }{
		&OrderEvent{}, &CancelRejected{}, &MarketStatus{}, &Fill{}, &OrderPlace{}, &DecodedTx{}, &OrderflowTx{},
	}
}

// randomize sets every field v reaches, through pointers, slices and
// nested structs, to a random value, zero values and nils included, so a
// field added to a payload is covered without a change to this test.
func randomize(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(pick(rng))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(randInt(rng) >> (64 - v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
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
			randomize(rng, v.Field(i))
		}
	}
}

// Every generated encoder writes json.Marshal's bytes for random values
// of every field, appending to what dst already holds.
func TestGeneratedAppendJSONMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, a := range appenders() {
		v := reflect.ValueOf(a).Elem()
		for range 500 {
			v.SetZero()
			randomize(rng, v)
			want, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			got := a.AppendJSON([]byte("head"))
			if !bytes.Equal(got[4:], want) || string(got[:4]) != "head" {
				t.Fatalf("%T\n got %s\nwant head%s", a, got, want)
			}
		}
	}
}

// ReadJSON reads what AppendJSON writes whenever its strings are plain,
// and gives what json.Unmarshal gives.
func TestOrderPlaceReadJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var read int
	for range 2000 {
		var p OrderPlace
		randomize(rng, reflect.ValueOf(&p).Elem())
		b := p.AppendJSON(nil)
		var got OrderPlace
		if !got.ReadJSON(b) {
			if plainStrings(p) {
				t.Fatalf("declined %s", b)
			}
			continue
		}
		read++
		if got != p {
			t.Fatalf("%s\nread %+v\nwant %+v", b, got, p)
		}
	}
	if read == 0 {
		t.Fatal("no payload was read")
	}
}

func plainStrings(p OrderPlace) bool {
	for _, s := range []string{p.InstrumentID, p.Quantity, p.Price, p.ClientOrderID} {
		for i := 0; i < len(s); i++ {
			if s[i] < ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\' || s[i] == '<' || s[i] == '>' || s[i] == '&' {
				return false
			}
		}
	}
	return true
}

// FuzzOrderPlaceReadJSON: whatever ReadJSON accepts, json.Unmarshal
// accepts with the same fields, and what it declines leaves the value
// alone.
func FuzzOrderPlaceReadJSON(f *testing.F) {
	f.Add([]byte(`{"orderId":1,"userId":2,"accountId":21,"instrumentId":"ETH-WB-100","side":false,"orderType":1,"quantity":"1","passive":false}`))
	f.Add([]byte(` { "orderId" : -0 , "source" : 9223372036854775807 } `))
	for _, s := range []string{`{"orderId":1,"OrderId":2}`, `{"orderId":1,"orderId":2}`, `{"orderId":1e3}`, `{"orderId":01}`,
		`{"orderId":9223372036854775808}`, `{"orderId":-9223372036854775808}`, `{"price":"\u0030"}`, `{"side":null}`,
		`{"side":true}x`, `{"side":true}{}`, `{}`, `{"extra":1}`, `{"quantity":"1"`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sentinel := OrderPlace{OrderID: -7, Quantity: "sentinel"}
		got := sentinel
		if !got.ReadJSON(b) {
			if got != sentinel {
				t.Fatalf("%q declined but changed the value to %+v", b, got)
			}
			return
		}
		var want OrderPlace
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("ReadJSON read %q, json.Unmarshal says %v", b, err)
		}
		if got != want {
			t.Fatalf("%q\nReadJSON  %+v\nUnmarshal %+v", b, got, want)
		}
	})
}
