package ledger_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// FuzzDecode feeds outside bytes, as a record value read from Kafka, to
// the settler's decoder. It never panics; a record it accepts becomes a
// command with the envelope's id and type and exactly the one payload
// that type names, so Apply never meets a command without a payload.
func FuzzDecode(f *testing.F) {
	goldens, err := filepath.Glob(filepath.Join("..", "..", "..", "topics", "testdata", "funding-*.json"))
	if err != nil || len(goldens) == 0 {
		f.Fatalf("funding goldens: %v (%d found)", err, len(goldens))
	}
	for _, name := range goldens {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"ledger.transfer","version":1,"id":"transfer-1","time":0,"data":{"quantity":1}}`))
	f.Add([]byte(`{"type":"ledger.withdraw","version":2,"id":"withdraw-1","time":0,"data":{}}`))
	f.Add([]byte(`{"type":"trade.executed","version":1,"id":"fill:1","time":0,"data":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := topics.Decode(b)
		if err != nil {
			return
		}
		c, err := ledger.Decode(e)
		if err != nil {
			return
		}
		if c.ID != e.ID || c.Type != e.Type {
			t.Fatalf("command %q %q from envelope %q %q", c.ID, c.Type, e.ID, e.Type)
		}
		set := 0
		for _, p := range []bool{c.Transfer != nil, c.Withdraw != nil, c.Deposit != nil, c.Submitted != nil, c.Confirmed != nil, c.Failed != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("%s decoded with %d payloads", e.Type, set)
		}
	})
}

// TestDecodeRefusesNUL: a command or event whose strings hold a NUL is
// refused, so that the settler records it as rejected; applied, its
// reason or hash made the batch's writes fail at every retry ("invalid
// byte sequence for encoding UTF8: 0x00") and the partition waited for
// good.
func TestDecodeRefusesNUL(t *testing.T) {
	for name, payload := range map[string]any{
		topics.TypeWithdrawalFailed:    topics.WithdrawalFailed{RequestID: 1, UserID: 2, Reason: "re\x00verted"},
		topics.TypeWithdrawalSubmitted: topics.WithdrawalSubmitted{RequestID: 1, UserID: 2, TxHash: "0x\x00"},
		topics.TypeDepositObserved:     topics.DepositObserved{ChainID: 1, BlockHash: "0x\x00b", Quantity: "1"},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := topics.FundingEnvelope(name, "id-1", time.UnixMilli(1), payload)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ledger.Decode(e); err == nil || !strings.Contains(err.Error(), "NUL character") {
				t.Fatalf("Decode: %v, want an error naming the NUL character", err)
			}
		})
	}
}
