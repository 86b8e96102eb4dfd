package topics

import (
	"bytes"
	"strings"
	"testing"
)

// The golden commands decode to the payload ingress meant and encode back
// to the same bytes, so a reader in another language can rely on them.
func TestOrderCommandGoldens(t *testing.T) {
	place := readGoldenEnvelope(t, "order-place.json")
	p, err := DecodeOrderPlace(place)
	if err != nil {
		t.Fatal(err)
	}
	want := OrderPlace{OrderID: 900001, UserID: 42, AccountID: 4202, InstrumentID: "ETH-PC-11000000",
		Side: true, OrderType: OrderTypeLimit, Quantity: "21000", Price: "0.000000002", ClientOrderID: "my-1"}
	if p != want {
		t.Fatalf("order place %+v, want %+v", p, want)
	}
	again, err := OrderCommandEnvelope(TypeOrderPlace, place.ID, place.At(), p)
	if err != nil {
		t.Fatal(err)
	}
	assertSameEncoding(t, place, again)

	open := readGoldenEnvelope(t, "market-open.json")
	m, err := DecodeMarketOpen(open)
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != InclusionPreconf || m.TotalPreconf != 15000000 || m.SellerAccountID != 702 || m.ID() != open.ID {
		t.Fatalf("market open %+v", m)
	}
	reopened, err := m.Envelope(open.At())
	if err != nil {
		t.Fatal(err)
	}
	assertSameEncoding(t, open, reopened)
}

func TestDecodeOrderCommandsCheckTypeAndVersion(t *testing.T) {
	data := []byte(`{"orderId":1}`)
	tests := map[string]func() error{
		"place as cancel": func() error {
			_, err := DecodeOrderCancel(Envelope{Type: TypeOrderPlace, Version: 1, Data: data})
			return err
		},
		"place version 2": func() error {
			_, err := DecodeOrderPlace(Envelope{Type: TypeOrderPlace, Version: 2, Data: data})
			return err
		},
		"batch bad json": func() error {
			_, err := DecodeOrderCancelBatch(Envelope{Type: TypeOrderCancelBatch, Version: 1, Data: []byte(`{"orderIds":"1"}`)})
			return err
		},
		"cancel all as place": func() error {
			_, err := DecodeOrderCancelAll(Envelope{Type: TypeOrderPlace, Version: 1, Data: data})
			return err
		},
		"open unknown family": func() error {
			_, err := DecodeMarketOpen(Envelope{Type: TypeMarketOpen, Version: 1, Data: []byte(`{"slot":1,"family":"spot"}`)})
			return err
		},
	}
	for name, decode := range tests {
		if err := decode(); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := OrderCommandEnvelope(TypeClockTick, "x", testTime, OrderPlace{}); err == nil {
		t.Error("OrderCommandEnvelope wrapped a clock tick")
	}
}

func TestInstrumentIDs(t *testing.T) {
	if got := InstrumentID(WholeBlock, 11000000); got != "ETH-WB-11000000" {
		t.Errorf("whole-block instrument %q", got)
	}
	if got := MarketID(InclusionPreconf, 11000000); got != 1_000_011_000_000 {
		t.Errorf("inclusion market id %d", got)
	}
	if got := MarketID(WholeBlock, 5); got != 2_000_000_000_005 {
		t.Errorf("whole-block market id %d", got)
	}
	f, slot, err := ParseInstrumentID("ETH-PC-42")
	if err != nil || f != InclusionPreconf || slot != 42 {
		t.Errorf("parse ETH-PC-42: %v %d %v", f, slot, err)
	}
	for _, bad := range []string{"", "ETH-WB-", "ETH-WB-01", "ETH-XX-1", "eth-wb-1", "ETH-WB-1x", "ETH-WB-1000000000000"} {
		if _, _, err := ParseInstrumentID(bad); err == nil || !strings.Contains(err.Error(), "parse instrument id") {
			t.Errorf("parse %q: %v", bad, err)
		}
	}
}

func readGoldenEnvelope(t *testing.T, name string) Envelope {
	t.Helper()
	e, err := Decode(bytes.TrimSpace(readGolden(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func assertSameEncoding(t *testing.T, want, got Envelope) {
	t.Helper()
	a, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("encodings differ\nwant %s\ngot  %s", a, b)
	}
}
