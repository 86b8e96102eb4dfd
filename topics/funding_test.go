package topics

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fundingGoldens are the ledger commands and funding events of
// docs/topics.md "Funding payloads", one testdata file each.
var fundingGoldens = []struct {
	file, typ, id string
	payload       any
}{
	{"funding-ledger-transfer.json", TypeLedgerTransfer, "transfer-1207",
		&LedgerTransfer{TransferID: 1207, UserID: 42, FromAccountID: 83, ToAccountID: 84, TokenID: 1, Quantity: "0.5"}},
	{"funding-ledger-withdraw.json", TypeLedgerWithdraw, "withdraw-7",
		&LedgerWithdraw{RequestID: 7, UserID: 42, AccountID: 83, TokenID: 1, ChainID: 1337, Quantity: "0.25", Fee: "0.0001",
			ToAddress: "0x9a8b1c2d3e4f5061728394a5b6c7d8e9f0a1b2c4"}},
	{"funding-deposit-observed.json", TypeDepositObserved, "deposit-1337-0x5c1f0e2b7a3d4c6e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e-0",
		&DepositObserved{ChainID: 1337, Contract: "0x5fbdb2315678afecb367f032d93f642f64180aa3", BlockNumber: 118,
			BlockHash: "0x8d2b4f6a0c1e3a5b7d9f0e2c4a6b8d0f1e3c5a7b9d0f2e4c6a8b0d2f4e6a8c0b", TransactionIndex: 0,
			TransactionHash: "0x5c1f0e2b7a3d4c6e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", LogIndex: 0,
			Sender: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", Depositor: "0x9a8b1c2d3e4f5061728394a5b6c7d8e9f0a1b2c4",
			TokenID: 1, Quantity: "1.5", AmountWei: "1500000000000000000"}},
	{"funding-withdrawal-submitted.json", TypeWithdrawalSubmitted, "withdrawal-submitted-7",
		&WithdrawalSubmitted{RequestID: 7, UserID: 42, TxHash: "0x1f3e5d7c9b0a2c4e6f8d0b2a4c6e8f0d2b4a6c8e0f2d4b6a8c0e2f4d6b8a0c2e"}},
	{"funding-withdrawal-confirmed.json", TypeWithdrawalConfirmed, "withdrawal-confirmed-7",
		&WithdrawalConfirmed{RequestID: 7, UserID: 42, TxHash: "0x1f3e5d7c9b0a2c4e6f8d0b2a4c6e8f0d2b4a6c8e0f2d4b6a8c0e2f4d6b8a0c2e", BlockNumber: 131}},
	{"funding-withdrawal-failed.json", TypeWithdrawalFailed, "withdrawal-failed-8",
		&WithdrawalFailed{RequestID: 8, UserID: 42, TxHash: "0x2a4c6e8f0d2b4a6c8e0f2d4b6a8c0e2f4d6b8a0c2e1f3e5d7c9b0a2c4e6f8d0b", Reason: "withdrawal transaction reverted"}},
}

// TestFundingGolden keeps the wire form of every funding payload in
// testdata, as analytics readers consume it: each Go value encodes to its
// file byte for byte, and each file decodes back to the value.
func TestFundingGolden(t *testing.T) {
	at := time.UnixMilli(1_763_712_000_123)
	for _, g := range fundingGoldens {
		t.Run(g.typ, func(t *testing.T) {
			e, err := FundingEnvelope(g.typ, g.id, at, g.payload)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", g.file))
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(want)) != string(b) {
				t.Fatalf("encoding\n%s\ngolden\n%s", b, want)
			}
			back, err := Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			got := reflect.New(reflect.TypeOf(g.payload).Elem()).Interface()
			if err := DecodeFunding(back, g.typ, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, g.payload) {
				t.Fatalf("decoded %+v, want %+v", got, g.payload)
			}
		})
	}
}

// TestFundingDecodeRefusesOtherTypes: a reader asking for one funding type
// never reads another type's or another version's payload as its own.
func TestFundingDecodeRefusesOtherTypes(t *testing.T) {
	e, err := FundingEnvelope(TypeLedgerTransfer, "transfer-1", time.UnixMilli(1), LedgerTransfer{TransferID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeFunding(e, TypeLedgerWithdraw, &LedgerWithdraw{}); err == nil {
		t.Error("a transfer decoded as a withdraw")
	}
	e.Version = 2
	if err := DecodeFunding(e, TypeLedgerTransfer, &LedgerTransfer{}); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("version 2 decoded: %v", err)
	}
}
