package topics

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenClockTick(t *testing.T) {
	at := time.UnixMilli(1738824020000)
	e, err := ClockTick{Slot: 11000000, Kind: TickTradingClosed}.Envelope(at)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	want := readGolden(t, "clock-tick.json")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from golden\n got %s\nwant %s", got, want)
	}
	decoded, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	tick, err := DecodeClockTick(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if tick != (ClockTick{Slot: 11000000, Kind: TickTradingClosed}) || decoded.At() != at {
		t.Fatalf("decoded %+v at %v", tick, decoded.At())
	}
}

func TestGoldenSlotLayout(t *testing.T) {
	layout := SlotLayout{Topic: Orders, Epochs: []Epoch{{0, 16}, {11000096, 32}}}
	e, err := LayoutEnvelope(layout, time.UnixMilli(1738823999000))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	want := readGolden(t, "slot-layout.json")
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from golden\n got %s\nwant %s", got, want)
	}
	decoded, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeLayout(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, layout) {
		t.Fatalf("decoded %+v, want %+v", back, layout)
	}
}

// A newer producer may add envelope fields and payload fields; an older
// reader must still read what it knows.
func TestGoldenFutureEnvelopeIsReadable(t *testing.T) {
	e, err := Decode(readGolden(t, "future-envelope.json"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != TypeOrderPlace || e.Version != 2 || e.ID != "cmd-01J8Z3W5K7Q" || e.Time != 1738824000123 {
		t.Fatalf("decoded %+v", e)
	}
	wantData := `{"accountId":42,"instrumentId":"ETH-WB-11000000","price":"0.05","note":"<&>"}`
	if string(e.Data) != wantData {
		t.Fatalf("data %s, want compacted %s", e.Data, wantData)
	}
	enc, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(enc, []byte(`"note":"<&>"`)) {
		t.Fatalf("encoding escaped HTML characters: %s", enc)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := map[string]string{
		"type": `"order.place"`, "version": `1`, "id": `"c-1"`, "time": `1700000000000`, "data": `{}`,
	}
	build := func(change map[string]string) string {
		var parts []string
		for _, k := range []string{"type", "version", "id", "time", "data"} {
			v, ok := change[k]
			if !ok {
				v = valid[k]
			}
			if v == "-" {
				continue
			}
			parts = append(parts, `"`+k+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"missing type", build(map[string]string{"type": "-"}), "missing type"},
		{"null type", build(map[string]string{"type": "null"}), "missing type"},
		{"empty type", build(map[string]string{"type": `""`}), "missing type"},
		{"upper-case type", build(map[string]string{"type": `"Order.Place"`}), "lower case"},
		{"type without dot", build(map[string]string{"type": `"order"`}), "no dot"},
		{"type with empty segment", build(map[string]string{"type": `"order..place"`}), "lower case"},
		{"missing id", build(map[string]string{"id": "-"}), "missing id"},
		{"empty id", build(map[string]string{"id": `""`}), "missing id"},
		{"id with space", build(map[string]string{"id": `"a b"`}), "printable ASCII"},
		{"id too long", build(map[string]string{"id": `"` + strings.Repeat("x", MaxIDLen+1) + `"`}), "longer than"},
		{"missing version", build(map[string]string{"version": "-"}), "missing version"},
		{"zero version", build(map[string]string{"version": "0"}), "below 1"},
		{"fractional version", build(map[string]string{"version": "1.5"}), "version"},
		{"string version", build(map[string]string{"version": `"1"`}), "version"},
		{"missing time", build(map[string]string{"time": "-"}), "missing time"},
		{"negative time", build(map[string]string{"time": "-1"}), "negative"},
		{"missing data", build(map[string]string{"data": "-"}), "missing data"},
		{"array data", build(map[string]string{"data": "[]"}), "not a JSON object"},
		{"string data", build(map[string]string{"data": `"{}"`}), "not a JSON object"},
		{"duplicate type", `{"type":"order.place","type":"fill.trade","version":1,"id":"c","time":1,"data":{}}`, "appears twice"},
		{"trailing data", build(nil) + `{}`, "after the object"},
		{"array", `[1,2]`, "not a JSON object"},
		{"empty input", ``, "not a JSON object"},
		{"truncated", `{"type":"order.place","version":1`, "invalid envelope"},
		{"differently cased name", `{"TYPE":"order.place","version":1,"id":"c","time":1,"data":{}}`, "missing type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.input))
			if err == nil {
				t.Fatalf("Decode(%s) succeeded", tt.input)
			}
			if !errors.Is(err, ErrInvalidEnvelope) {
				t.Errorf("error %q does not wrap ErrInvalidEnvelope", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	e := Envelope{Type: TypeOrderPlace, Version: 1, ID: "c-1", Time: 1, Data: json.RawMessage(`{}`)}
	if _, err := Encode(e); err != nil {
		t.Fatalf("valid envelope: %v", err)
	}
	for name, broken := range map[string]Envelope{
		"no id":      {Type: e.Type, Version: 1, Time: 1, Data: e.Data},
		"no data":    {Type: e.Type, Version: 1, ID: "c", Time: 1},
		"bad data":   {Type: e.Type, Version: 1, ID: "c", Time: 1, Data: json.RawMessage(`{"a":`)},
		"no version": {Type: e.Type, ID: "c", Time: 1, Data: e.Data},
	} {
		if _, err := Encode(broken); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("%s: Encode error %v, want ErrInvalidEnvelope", name, err)
		}
	}
}

func TestEnvelopeRoundTripAndHeaders(t *testing.T) {
	payload := map[string]any{"accountId": 7, "price": "0.001"}
	e, err := NewEnvelope(TypeOrderCancel, 3, "cmd:abc", time.UnixMilli(42), payload)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e) {
		t.Fatalf("round trip %+v, want %+v", back, e)
	}
	var got struct {
		AccountID int    `json:"accountId"`
		Price     string `json:"price"`
	}
	if err := back.UnmarshalData(&got); err != nil || got.AccountID != 7 || got.Price != "0.001" {
		t.Fatalf("data %+v, err %v", got, err)
	}
	headers := e.Headers()
	want := []Header{{HeaderType, []byte("order.cancel")}, {HeaderVersion, []byte("3")}}
	if !reflect.DeepEqual(headers, want) {
		t.Fatalf("headers %q, want %q", headers, want)
	}
}
