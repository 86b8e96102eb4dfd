package topics

import (
	"reflect"
	"testing"
)

// compactCases are envelopes the compact reader reads itself (read true)
// or leaves to the strict one; the fuzz test starts from them too.
var compactCases = []struct {
	name string
	in   string
	read bool
}{
	{"as Encode writes it", `{"type":"order.place","version":1,"id":"cmd-1","time":1700000000000,"data":{"price":"0.1","n":[1,-2.5e+3,true,false,null,{}],"s":"a\"\\\/\b\f\n\r\tz\u00e9"}}`, true},
	{"members in another order", `{"data":{},"time":0,"id":"x","version":2,"type":"a.b"}`, true},
	{"non-ASCII bytes in a data string", "{\"type\":\"a.b\",\"version\":1,\"id\":\"x\",\"time\":0,\"data\":{\"m\":\"caf\xc3\xa9\"}}", true},
	{"negative zero time", `{"type":"a.b","version":1,"id":"x","time":-0,"data":{}}`, true},
	{"whitespace between members", `{"type":"a.b", "version":1,"id":"x","time":0,"data":{}}`, false},
	{"whitespace in data", `{"type":"a.b","version":1,"id":"x","time":0,"data":{"a": 1}}`, false},
	{"trailing newline", "{\"type\":\"a.b\",\"version\":1,\"id\":\"x\",\"time\":0,\"data\":{}}\n", false},
	{"unknown member", `{"type":"a.b","version":1,"id":"x","time":0,"data":{},"extra":1}`, false},
	{"repeated member", `{"type":"a.b","type":"a.c","version":1,"id":"x","time":0,"data":{}}`, false},
	{"escaped type", `{"type":"a\u002eb","version":1,"id":"x","time":0,"data":{}}`, false},
	{"version as a float", `{"type":"a.b","version":1.0,"id":"x","time":0,"data":{}}`, false},
	{"version with an exponent", `{"type":"a.b","version":1e0,"id":"x","time":0,"data":{}}`, false},
	{"time beyond int64", `{"type":"a.b","version":1,"id":"x","time":9223372036854775808,"data":{}}`, false},
	{"leading zero", `{"type":"a.b","version":01,"id":"x","time":0,"data":{}}`, false},
	{"null id", `{"type":"a.b","version":1,"id":null,"time":0,"data":{}}`, false},
	{"missing data", `{"type":"a.b","version":1,"id":"x","time":0}`, false},
	{"data an array", `{"type":"a.b","version":1,"id":"x","time":0,"data":[]}`, false},
	{"version 0", `{"type":"a.b","version":0,"id":"x","time":0,"data":{}}`, false},
	{"upper-case type", `{"type":"A.b","version":1,"id":"x","time":0,"data":{}}`, false},
	{"control byte in data", "{\"type\":\"a.b\",\"version\":1,\"id\":\"x\",\"time\":0,\"data\":{\"a\":\"\x01\"}}", false},
	{"bad escape in data", `{"type":"a.b","version":1,"id":"x","time":0,"data":{"a":"\x"}}`, false},
	{"short unicode escape", `{"type":"a.b","version":1,"id":"x","time":0,"data":{"a":"\u12"}}`, false},
	{"unterminated data", `{"type":"a.b","version":1,"id":"x","time":0,"data":{"a":1`, false},
	{"nested deeper than the compact reader goes", `{"type":"a.b","version":1,"id":"x","time":0,"data":` + nested(40) + `}`, false},
	{"data after the object", `{"type":"a.b","version":1,"id":"x","time":0,"data":{}}{}`, false},
	{"empty object", `{}`, false},
}

func nested(depth int) string {
	s := "1"
	for range depth {
		s = `{"a":` + s + `}`
	}
	return s
}

// TestDecodeCompact checks which envelopes the compact reader takes, and
// that Decode answers every case exactly as the strict reader does.
func TestDecodeCompact(t *testing.T) {
	for _, c := range compactCases {
		t.Run(c.name, func(t *testing.T) {
			_, read := decodeCompact([]byte(c.in))
			if read != c.read {
				t.Fatalf("compact reader took it: %v, want %v", read, c.read)
			}
			got, gotErr := Decode([]byte(c.in))
			want, wantErr := decodeStrict([]byte(c.in))
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("Decode error %v, strict %v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode %+v, strict %+v", got, want)
			}
		})
	}
}

// BenchmarkDecode reads an order event as the matcher writes it, through
// Decode (the compact reader) and through the strict reader alone.
func BenchmarkDecode(b *testing.B) {
	ev := OrderEvent{CommandID: "cmd-1", OrderID: 42, ClientOrderID: "c-42", UserID: 7, AccountID: 71, MarketID: 3,
		InstrumentID: "ETH-PC-1000", Slot: 1000, Side: true, OrderType: OrderTypeLimit, Price: "0.000000002",
		Quantity: "21000", Fulfilled: "0", Status: OrderStatusPending}
	value := ev.AppendJSON(AppendEnvelopeHead(nil, TypeOrderAccepted, 1, "oe:1000:1", 1_700_000_000_000))
	value = append(value, '}')
	for _, r := range []struct {
		name string
		read func([]byte) (Envelope, error)
	}{{"compact", Decode}, {"strict", decodeStrict}} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := r.read(value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode encodes an order event's envelope whose data is compact,
// as json.Marshal writes it: through Encode (the shortcut) and through the
// general path of encoding/json's Compact.
func BenchmarkEncode(b *testing.B) {
	ev := OrderEvent{CommandID: "cmd-1", OrderID: 42, ClientOrderID: "c-42", UserID: 7, AccountID: 71, MarketID: 3,
		InstrumentID: "ETH-PC-1000", Slot: 1000, Side: true, OrderType: OrderTypeLimit, Price: "0.000000002",
		Quantity: "21000", Fulfilled: "0", Status: OrderStatusPending}
	e := Envelope{Type: TypeOrderAccepted, Version: 1, ID: "oe:1000:1", Time: 1_700_000_000_000, Data: ev.AppendJSON(nil)}
	for _, r := range []struct {
		name   string
		encode func() ([]byte, error)
	}{
		{"compact", func() ([]byte, error) { return Encode(e) }},
		{"general", func() ([]byte, error) {
			return encodeData(AppendEnvelopeHead(make([]byte, 0, len(e.Data)+128), e.Type, e.Version, e.ID, e.Time), e.Data)
		}},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := r.encode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
