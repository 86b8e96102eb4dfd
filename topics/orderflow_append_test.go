package topics

import (
	"bytes"
	"encoding/json"
	"testing"
)

func decodedSamples() []DecodedTx {
	to := "0x00000000000000000000000000000000000000aa"
	return []DecodedTx{
		{ChainID: "0x539", Type: "0x2", Hash: "0x01", From: "0xf1", To: &to, Nonce: "0x0", Value: "0x1", Gas: "0x5208",
			MaxFeePerGas: "0x2", MaxPriorityFeePerGas: "0x1", Data: "0x", AccessList: []AccessTuple{}},
		{ChainID: "0x1", Type: "0x0", Hash: "0x02", From: "0xf2", Nonce: "0x5", Value: "0x0", Gas: "0x1", GasPrice: "0x9", Data: "0xdead"},
		{ChainID: "0x1", Type: "0x1", Hash: "0x03", From: "0xf3", To: &to, Nonce: "0x5", Value: "0x0", Gas: "0x1", GasPrice: "0x9", Data: "0x",
			AccessList: []AccessTuple{{Address: "0xaa", StorageKeys: []string{"0x01", "0x02"}}, {Address: "0xbb"}}},
		{ChainID: "0x1", Type: "0x3", Hash: "0x04", From: "0xf4", To: &to, Nonce: "0x1", Value: "0x0", Gas: "0x1", MaxFeePerGas: "0x2",
			MaxPriorityFeePerGas: "0x1", Data: "0x", AccessList: []AccessTuple{}, MaxFeePerBlobGas: "0x3", BlobVersionedHashes: []string{"0x01"}},
		{ChainID: "0x1", Type: "0x4", Hash: "0x05", From: "0xf5", To: &to, Nonce: "0x1", Value: "0x0", Gas: "0x1", MaxFeePerGas: "0x2",
			MaxPriorityFeePerGas: "0x1", Data: "0x", AccessList: []AccessTuple{},
			AuthorizationList: []Authorization{{ChainID: "0x1", Address: "0xcc", Nonce: "0x0", Authority: "0xdd"}, {ChainID: "0x0", Address: "0xee", Nonce: "0x1"}}},
	}
}

// TestOrderflowTxAppendJSON: the hand-written encoding is json.Marshal's,
// byte for byte, for every transaction type.
func TestOrderflowTxAppendJSON(t *testing.T) {
	for _, d := range decodedSamples() {
		m := OrderflowTx{Hash: d.Hash, Raw: "0x02f8", Tx: d, Originator: "0xab", Refund: RefundPolicy{Recipient: "0xcd", Percent: 90},
			Method: "eth_sendRawTransaction", ReceivedAt: 1_700_000_000_123}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("type %s:\n got %s\nwant %s", d.Type, got, want)
		}
	}
}

// FuzzDecodedTxAppendJSON: any field values, escapes included, encode as
// json.Marshal encodes them.
func FuzzDecodedTxAppendJSON(f *testing.F) {
	f.Add("0x539", "0x2", "<&>\"\\\u2028", "0x1", true, 2, 1, "0xaa", true)
	f.Fuzz(func(t *testing.T, chain, typ, s string, val string, hasTo bool, tuples, keys int, auth string, blob bool) {
		d := DecodedTx{ChainID: chain, Type: typ, Hash: s, From: val, Nonce: s, Value: val, Gas: chain, GasPrice: s, Data: val}
		if hasTo {
			d.To = &s
		}
		if tuples%3 != 0 {
			d.AccessList = []AccessTuple{}
			for range tuples % 3 {
				tu := AccessTuple{Address: s}
				for range keys % 3 {
					tu.StorageKeys = append(tu.StorageKeys, val)
				}
				d.AccessList = append(d.AccessList, tu)
			}
		}
		if auth != "" {
			d.AuthorizationList = []Authorization{{ChainID: chain, Address: auth, Nonce: s, Authority: val}}
		}
		if blob {
			d.MaxFeePerBlobGas, d.BlobVersionedHashes = s, []string{val, auth}
		}
		want, _ := json.Marshal(d)
		if got := d.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}
