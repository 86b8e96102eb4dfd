package builders

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// FuzzDecodeRecord: any record value under any orderflow type decodes to
// a checked record or an error, never a panic, and a decoded record has
// what the forwarder relies on.
func FuzzDecodeRecord(f *testing.F) {
	raw := signed(f, 1, 0)
	f.Add(topics.TypeOrderflowTx, txRecordOf(f, raw, topics.RefundPolicy{Percent: 90}).Value)
	f.Add(topics.TypeOrderflowSearcherBundle, searcherRecord(f, "eth_sendBundle", map[string]any{"txs": []string{txHash(f, raw), signed(f, 2, 0)}}).Value)
	f.Add(topics.TypeOrderflowSearcherBundle, []byte(`{"data":{"searcher":"0x1","cancel":true,"replacementUuid":"u"}}`))
	f.Add(topics.TypeOrderflowOriginatorBundle, []byte(`{"data":{"bundleHash":"0x","txs":[{"hash":"0x","tx":null}]}}`))
	f.Add(topics.TypeOrderflowTx, []byte(`{"data":{"hash":"0x0000000000000000000000000000000000000000000000000000000000000001","raw":"0x02","tx":{"n":1e9999},"refund":{"percent":100},"method":"\u0000"}}`))
	f.Fuzz(func(t *testing.T, typ string, value []byte) {
		r := &kgo.Record{Value: value, Headers: []kgo.RecordHeader{{Key: topics.HeaderType, Value: []byte(typ)}, {Key: topics.HeaderVersion, Value: []byte("1")}}}
		rec, err := decodeRecord(r)
		if err != nil {
			return
		}
		switch {
		case rec.tx != nil:
			if !isHash(rec.tx.Hash) || len(rec.tx.Tx) == 0 || !plainJSON(rec.tx.Tx) || rec.tx.Refund.Percent < 0 || rec.tx.Refund.Percent > 99 {
				t.Fatalf("accepted tx %+v", rec.tx)
			}
		case rec.ob != nil:
			for _, tx := range rec.ob.Txs {
				if tx.Tx == nil {
					t.Fatalf("accepted bundle tx without decoding %+v", tx)
				}
			}
		case rec.sb != nil:
			if !rec.sb.Cancel && (len(rec.sb.Txs) == 0 || !isHash(rec.sb.BundleHash)) {
				t.Fatalf("accepted searcher bundle %+v", rec.sb)
			}
		default:
			t.Fatal("no payload and no error")
		}
		if topics.HasNUL(value) {
			t.Fatalf("accepted a record with a NUL character: %q", value)
		}
	})
}

// FuzzBatchErrors: whatever a builder answers to a batch, every call gets
// exactly one outcome.
func FuzzBatchErrors(f *testing.F) {
	f.Add([]byte(`[{"jsonrpc":"2.0","id":0,"result":{"bundleHash":"0x1"}},{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}]`), 2)
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch not supported"}}`), 3)
	f.Add([]byte(`[{"id":"0"},{"id":7},{"id":-1},{"id":0}]`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 1 || n > 1000 {
			return
		}
		errs := batchErrors("http://builder", 200, body, n)
		if len(errs) != n {
			t.Fatalf("%d outcomes for %d calls", len(errs), n)
		}
	})
}
