package engine

import (
	"os"
	"path/filepath"
	"testing"

	"blockspace.exchange/topics"
)

// FuzzDecodePlace feeds outside bytes, as an envelope, to the fast
// order.place payload reader. It must never panic, and whatever payload it
// accepts the strict decoder (topics.DecodeOrderPlace) must accept with
// the same fields; what it declines goes to the strict decoder, so the
// matcher reads every record the same way either path would.
func FuzzDecodePlace(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("..", "..", "..", "topics", "testdata", "order-place.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	for _, s := range []string{
		`{"type":"order.place","version":1,"id":"c-1","time":5,"data":{"orderId":1,"userId":2,"accountId":21,"instrumentId":"ETH-WB-100","side":false,"orderType":1,"quantity":"1","passive":false}}`,
		` {"data":{"price":"0.5","orderId":-0},"time":0,"id":"x","version":1,"type":"order.place"} `,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"orderId":1,"OrderId":2}}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"orderId":1,"orderId":2}}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"orderId":1e3}}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"orderId":9223372036854775808}}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"price":"\u0030"}}`,
		`{"type":"order.place","version":2,"id":"x","time":1,"data":{}}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{},"extra":[1]}`,
		`{"type":"order.place","version":1,"id":"x","time":1,"data":{"side":null}}`,
		`{"type":"order.place","version":1,"id":"x","time":-1,"data":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := topics.Decode(b)
		if err != nil || env.Type != topics.TypeOrderPlace || env.Version != topics.OrderCommandVersion {
			return
		}
		fast, ok := decodePlaceData(env.Data)
		if !ok {
			return
		}
		strict, err := topics.DecodeOrderPlace(env)
		if err != nil {
			t.Fatalf("the fast path read %q, the strict decoder says %v", b, err)
		}
		if strict != fast {
			t.Fatalf("%q\nfast   %+v\nstrict %+v", b, fast, strict)
		}
	})
}

// FuzzApplyRecord feeds outside bytes to an engine with open markets: it
// must never panic, and the record must have the same effect through
// ApplyRecord as through the strict decoder and Apply.
func FuzzApplyRecord(f *testing.F) {
	f.Add([]byte(`{"type":"order.place","version":1,"id":"c-1","time":5,"data":{"orderId":1,"userId":2,"accountId":21,"instrumentId":"ETH-PC-100","side":true,"orderType":2,"quantity":"21000","price":"0.000000002"}}`))
	f.Add([]byte(`{"type":"order.place","version":1,"id":"c-2","time":5,"data":{"orderId":2,"userId":1,"accountId":11,"instrumentId":"ETH-WB-100","side":false,"orderType":3,"quantity":"1","price":"0.50"}}`))
	f.Add([]byte(`{"type":"order.cancel","version":1,"id":"c-3","time":5,"data":{"userId":2,"accountId":21,"instrumentId":"ETH-PC-100","orderId":1}}`))
	f.Add([]byte(`{"type":"clock.tick","version":1,"id":"tick:100:trading_closed","time":9,"data":{"slot":100,"kind":"trading_closed"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, strict := newHarness(t).e, newHarness(t).e
		got, gotErr := fast.ApplyRecord(b)
		var want []Output
		env, wantErr := topics.Decode(b)
		if wantErr == nil {
			want, wantErr = strict.Apply(env)
		}
		if (gotErr == nil) != (wantErr == nil) || len(got) != len(want) {
			t.Fatalf("%q: ApplyRecord %d outputs, %v; strict %d outputs, %v", b, len(got), gotErr, len(want), wantErr)
		}
		for i := range got {
			if string(got[i].Value) != string(want[i].Value) {
				t.Fatalf("%q: output %d\n%s\n%s", b, i, got[i].Value, want[i].Value)
			}
		}
	})
}
