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

// readers are the types with a generated ReadJSON.
func readers() []interface {
	AppendJSON([]byte) []byte
	ReadJSON([]byte) bool
} {
	return []interface {
		AppendJSON([]byte) []byte
		ReadJSON([]byte) bool
	}{&OrderEvent{}, &CancelRejected{}, &MarketStatus{}, &Fill{}, &OrderPlace{}}
}

// ReadJSON reads what AppendJSON writes whenever its strings are plain,
// and gives what json.Unmarshal gives; Envelope.UnmarshalData gives the
// same whether the generated reader or encoding/json reads the payload.
func TestReadJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, r := range readers() {
		typ := reflect.TypeOf(r).Elem()
		var read, declined int
		for range 2000 {
			v := reflect.New(typ)
			randomize(rng, v.Elem())
			if rng.IntN(2) == 0 {
				plainify(v.Elem())
			}
			b := v.Interface().(interface{ AppendJSON([]byte) []byte }).AppendJSON(nil)
			got := reflect.New(typ)
			ok := got.Interface().(interface{ ReadJSON([]byte) bool }).ReadJSON(b)
			want := reflect.New(typ)
			if err := json.Unmarshal(b, want.Interface()); err != nil {
				t.Fatalf("%s: %s: %v", typ, b, err)
			}
			viaEnvelope := reflect.New(typ)
			if err := (Envelope{Type: "t", Data: b}).UnmarshalData(viaEnvelope.Interface()); err != nil {
				t.Fatalf("%s: UnmarshalData %s: %v", typ, b, err)
			}
			if !reflect.DeepEqual(viaEnvelope.Interface(), want.Interface()) {
				t.Fatalf("%s: %s\nUnmarshalData %+v\nwant          %+v", typ, b, viaEnvelope.Elem(), want.Elem())
			}
			if !ok {
				if plainStrings(v.Elem()) {
					t.Fatalf("%s: declined %s", typ, b)
				}
				if !got.Elem().IsZero() {
					t.Fatalf("%s: declined %s but set %+v", typ, b, got.Elem())
				}
				declined++
				continue
			}
			read++
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Fatalf("%s: %s\nread %+v\nwant %+v", typ, b, got.Elem(), want.Elem())
			}
		}
		if read == 0 || declined == 0 {
			t.Fatalf("%s: %d payloads read and %d declined; the test covers neither path without both", typ, read, declined)
		}
	}
}

// plainify replaces every string v reaches that JSON escapes with one it
// does not.
func plainify(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if !plainStrings(v) {
			v.SetString("plain 1.5")
		}
	case reflect.Pointer:
		if !v.IsNil() {
			plainify(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			plainify(v.Field(i))
		}
	}
}

// plainStrings reports whether every string v reaches is printable ASCII
// that JSON writes without an escape.
func plainStrings(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		for i := 0; i < len(s); i++ {
			if s[i] < ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\' || s[i] == '<' || s[i] == '>' || s[i] == '&' {
				return false
			}
		}
	case reflect.Pointer:
		return v.IsNil() || plainStrings(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if !plainStrings(v.Field(i)) {
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

// FuzzOrderEventReadJSON is FuzzOrderPlaceReadJSON for a payload with a
// pointer member, null or not.
func FuzzOrderEventReadJSON(f *testing.F) {
	f.Add([]byte(`{"commandId":"c","orderId":7,"userId":2,"accountId":21,"marketId":1,"instrumentId":"ETH-PC-100","slot":100,"side":true,"orderType":2,"passive":false,"quantity":"1","fulfilled":"0","status":1,"errorCode":null}`))
	for _, s := range []string{`{"errorCode":191}`, `{"errorCode": null }`, `{"errorCode":nul}`, `{"errorCode":"1"}`, `{"errorCode":1.5}`,
		`{"errorCode":null,"errorCode":1}`, `{"slot":-1}`, `{"slot":18446744073709551615}`, `{"slot":18446744073709551616}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		code := 5
		sentinel := OrderEvent{OrderID: -7, ErrorCode: &code}
		got := sentinel
		if !got.ReadJSON(b) {
			if !reflect.DeepEqual(got, sentinel) {
				t.Fatalf("%q declined but changed the value to %+v", b, got)
			}
			return
		}
		var want OrderEvent
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("ReadJSON read %q, json.Unmarshal says %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q\nReadJSON  %+v\nUnmarshal %+v", b, got, want)
		}
	})
}

// BenchmarkReadOrderEvent reads an order.filled payload through
// Envelope.UnmarshalData (the generated reader) and, as the baseline in
// the same run, through encoding/json.
func BenchmarkReadOrderEvent(b *testing.B) {
	code := 191
	ev := OrderEvent{CommandID: "0192f3a4-1111-7000-8000-000000000001", OrderID: 123000, UserID: 17, AccountID: 34,
		MarketID: 1_000_000_000_100, InstrumentID: "ETH-PC-100", Slot: 100, Side: true, OrderType: OrderTypeLimit,
		Price: "0.000000002", Quantity: "21000", Fulfilled: "21000", Status: OrderStatusDone, ErrorCode: &code,
		TradeID: 99, LastPrice: "0.000000002", LastQuantity: "21000", LastFee: "0.000000000000042"}
	e := Envelope{Type: TypeOrderFilled, Data: ev.AppendJSON(nil)}
	b.Run("generated", func(b *testing.B) {
		for b.Loop() {
			var got OrderEvent
			if err := e.UnmarshalData(&got); err != nil || got.OrderID != ev.OrderID {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var got OrderEvent
			if err := json.Unmarshal(e.Data, &got); err != nil || got.OrderID != ev.OrderID {
				b.Fatal(err)
			}
		}
	})
}
