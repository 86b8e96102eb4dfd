package topics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var registration = ValidatorRegistered{
	Pubkey:  "0x" + strings.Repeat("ab", 48),
	UserID:  7,
	Address: "0x" + strings.Repeat("12", 20), ValidatorIndex: 1234, ValidatorType: 1,
	At: 1_738_824_000_123,
}

func TestValidatorEventsRoundTrip(t *testing.T) {
	for _, typ := range []string{TypeValidatorRegistered, TypeValidatorDeregistered} {
		e, err := registration.Envelope(typ)
		if err != nil {
			t.Fatal(err)
		}
		if e.ID != strings.TrimPrefix(typ, "validator.")+":"+registration.Pubkey+":1738824000123" {
			t.Errorf("%s id %q", typ, e.ID)
		}
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeValidatorRegistered(back)
		if err != nil || got != registration {
			t.Errorf("%s decoded %+v, %v", typ, got, err)
		}
	}
	if _, err := registration.Envelope(TypeProposerDuty); err == nil {
		t.Error("a registration became a proposer duty")
	}

	d := ProposerDuty{Slot: 65, Epoch: 2, Pubkey: registration.Pubkey, UserID: 7, AccountID: 14}
	e, err := d.Envelope(time.UnixMilli(5))
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "proposer_duty:65" {
		t.Errorf("duty id %q: two clocks must write the same id", e.ID)
	}
	got, err := DecodeProposerDuty(e)
	if err != nil || got != d {
		t.Errorf("duty decoded %+v, %v", got, err)
	}
	if _, err := DecodeValidatorRegistered(e); err == nil {
		t.Error("a duty decoded as a registration")
	}
	e.Version = 2
	if _, err := DecodeProposerDuty(e); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("version 2 decoded: %v", err)
	}
}

// TestValidatorGolden keeps the wire form of validator.registered in
// testdata for readers of the validators topic.
func TestValidatorGolden(t *testing.T) {
	e, err := registration.Envelope(TypeValidatorRegistered)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "validator-registered.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(want)) != string(b) {
		t.Fatalf("encoding\n%s\ngolden\n%s", b, want)
	}
}
