package topics

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// strange strings exercise every escaping rule of encoding/json.
var strange = []string{"", "plain", `q"uote`, `back\slash`, "<&>", "tab\there", "nl\n", "\x00\x1f", "é", "\u2028\u2029", "bad\xffutf8", "ETH-PC-11000000", "0.000000001"}

func pick(rng *rand.Rand) string { return strange[rng.IntN(len(strange))] }

func randInt(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return -rng.Int64()
	}
	return rng.Int64()
}

// The appending encoders write exactly what json.Marshal writes, so
// switching between them never changes a byte on the wire.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v any, got []byte) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%T\n got %s\nwant %s", v, got, want)
		}
	}
	for range 2000 {
		code := int(randInt(rng))
		ev := OrderEvent{CommandID: pick(rng), OrderID: randInt(rng), ClientOrderID: pick(rng), UserID: randInt(rng),
			AccountID: randInt(rng), MarketID: randInt(rng), InstrumentID: pick(rng), Slot: rng.Uint64(), Side: rng.IntN(2) == 0,
			OrderType: int(randInt(rng)), Passive: rng.IntN(2) == 0, Price: pick(rng), Quantity: pick(rng), Fulfilled: pick(rng),
			Status: int(randInt(rng)), Reason: pick(rng), Message: pick(rng), TradeID: randInt(rng), LastPrice: pick(rng), LastQuantity: pick(rng),
			LastFee: pick(rng), LastPreconfQuantity: pick(rng)}
		if rng.IntN(2) == 0 {
			ev.ErrorCode = &code
		}
		check(ev, ev.AppendJSON(nil))
		cr := CancelRejected{CommandID: pick(rng), UserID: randInt(rng), AccountID: randInt(rng), InstrumentID: pick(rng),
			OrderID: randInt(rng), ClientOrderID: pick(rng), Code: int(randInt(rng)), Message: pick(rng)}
		check(cr, cr.AppendJSON(nil))
		ms := MarketStatus{CommandID: pick(rng), MarketID: randInt(rng), InstrumentID: pick(rng), Slot: rng.Uint64(),
			Status: int(randInt(rng)), AvailablePreconf: randInt(rng), TotalPreconf: randInt(rng)}
		check(ms, ms.AppendJSON(nil))
		f := Fill{TradeID: randInt(rng), CommandID: pick(rng), MarketID: randInt(rng), InstrumentID: pick(rng), Slot: rng.Uint64(),
			Price: pick(rng), Quantity: pick(rng), Side: rng.IntN(2) == 0, TakerOrderID: randInt(rng), TakerUserID: randInt(rng),
			TakerAccountID: randInt(rng), MakerOrderID: randInt(rng), MakerUserID: randInt(rng), MakerAccountID: randInt(rng),
			PrimarySale: rng.IntN(2) == 0, PreconfQuantity: pick(rng), AvailablePreconf: randInt(rng), BuyerFee: pick(rng), SellerFee: pick(rng)}
		check(f, f.AppendJSON(nil))
		op := OrderPlace{OrderID: randInt(rng), UserID: randInt(rng), AccountID: randInt(rng), InstrumentID: pick(rng),
			Side: rng.IntN(2) == 0, OrderType: int(randInt(rng)), Quantity: pick(rng), Price: pick(rng),
			ClientOrderID: pick(rng), Passive: rng.IntN(2) == 0, Source: int(randInt(rng))}
		check(op, op.AppendJSON(nil))
	}
}

// referenceEncode is the reflection encoder Encode replaced.
func referenceEncode(t *testing.T, e Envelope) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		Type    string          `json:"type"`
		Version int             `json:"version"`
		ID      string          `json:"id"`
		Time    int64           `json:"time"`
		Data    json.RawMessage `json:"data"`
	}{e.Type, e.Version, e.ID, e.Time, e.Data})
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestEncodeMatchesReflection(t *testing.T) {
	ids := []string{"x", `a"b`, `a\b`, "<&>", "oe:100:7", "~!#$%^*()"}
	datas := []string{`{}`, ` {"a" : [1, 2, {"b":"<&>"}] }`, "{\n\t\"k\":\"\\u003c\"}", `{"s":"é"}`}
	for _, id := range ids {
		for _, d := range datas {
			e := Envelope{Type: "order.cancel_batch", Version: 3, ID: id, Time: 1738824000123, Data: json.RawMessage(d)}
			got, err := Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceEncode(t, e); !bytes.Equal(got, want) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
			head := AppendEnvelopeHead(nil, e.Type, e.Version, e.ID, e.Time)
			if !bytes.HasPrefix(got, head) {
				t.Fatalf("head %s is not a prefix of %s", head, got)
			}
		}
	}
	for _, bad := range []string{``, ` `, `[]`, `{`, `{} {}`, `{"a":}`} {
		if _, err := Encode(Envelope{Type: "a.b", Version: 1, ID: "x", Data: json.RawMessage(bad)}); err == nil {
			t.Errorf("data %q encoded", bad)
		}
	}
}
