package topics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var accountPayloads = []any{
	BalanceChanged{UserID: 7, AccountID: 12, TokenID: 1, Quantity: "1.25", Locked: "0.5", Available: "0.75", Version: 42},
	TransactionPosted{UserID: 7, AccountID: 12, TokenID: 1, TrxID: 9001, Type: 15, Amount: "-0.0005", Balance: "1.25", CreateDate: 1_738_824_000_000},
	PositionChanged{UserID: 7, AccountID: 12, InstrumentID: "ETH-PC-11000000", MarketID: 1_000_011_000_000, Slot: 11_000_000,
		Quantity: "21000", Locked: "1000", Available: "20000", AveragePrice: "0.000000002", UpdateDate: 1_738_824_000_000, Version: 42},
}

func decodeAccountPayload(e Envelope) (any, error) {
	switch e.Type {
	case TypeBalanceChanged:
		return DecodeBalanceChanged(e)
	case TypeTransactionPosted:
		return DecodeTransactionPosted(e)
	case TypePositionChanged:
		return DecodePositionChanged(e)
	}
	return nil, nil
}

// TestAccountEnvelopesRoundTrip encodes each payload of the account feed
// and decodes it back, and checks the ids consumers deduplicate on.
func TestAccountEnvelopesRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_738_824_000_123)
	wantIDs := []string{"balance:12:1:42", "posting:9001", "position:12:ETH-PC-11000000:42"}
	for i, p := range accountPayloads {
		e, err := AccountEnvelope(at, p)
		if err != nil {
			t.Fatal(err)
		}
		if e.ID != wantIDs[i] || e.Time != at.UnixMilli() || e.Version != AccountEventVersion {
			t.Errorf("envelope %s v%d at %d", e.ID, e.Version, e.Time)
		}
		if m, ok := LookupType(e.Type); !ok || m.Topic != AccountEvents {
			t.Errorf("%s is not an account-events type", e.Type)
		}
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAccountPayload(back)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("decoded %+v (%v), want %+v", got, err, p)
		}
	}
	if _, err := AccountEnvelope(at, ClockTick{}); err == nil {
		t.Error("a clock tick became an account envelope")
	}
	e, _ := AccountEnvelope(at, accountPayloads[0])
	e.Version = 2
	if _, err := DecodeBalanceChanged(e); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("version 2 decoded: %v", err)
	}
	if _, err := DecodePositionChanged(e); err == nil {
		t.Error("a balance decoded as a position")
	}
}

// TestAccountGolden keeps the wire form of account.balance_changed in
// testdata, as the WebSocket service reads it.
func TestAccountGolden(t *testing.T) {
	e, err := AccountEnvelope(time.UnixMilli(1_738_824_000_123), accountPayloads[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "account-balance-changed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Fatalf("encoding\n%s\ngolden\n%s", b, want)
	}
}

// FuzzDecodeAccountEvent feeds outside bytes to the account feed's
// decoders: they never panic, and a payload they accept encodes and
// decodes back to itself.
func FuzzDecodeAccountEvent(f *testing.F) {
	for _, p := range accountPayloads {
		e, err := AccountEnvelope(time.UnixMilli(1), p)
		if err != nil {
			f.Fatal(err)
		}
		b, err := Encode(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"account.balance_changed","version":1,"id":"x","time":0,"data":{"userId":"7"}}`))
	f.Add([]byte(`{"type":"account.position_changed","version":1,"id":"x","time":0,"data":{"slot":-1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		p, err := decodeAccountPayload(e)
		if err != nil || p == nil {
			return
		}
		again, err := AccountEnvelope(e.At(), p)
		if err != nil {
			return // an id the payload's fields make invalid (e.g. a space in instrumentId)
		}
		back, err := decodeAccountPayload(again)
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip of %+v gave %+v (%v)", p, back, err)
		}
	})
}
