package orderflow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func bundleJSON(t testing.TB, fields map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseBundle(t *testing.T) {
	tx1, tx2 := sign(t, testChain, dynamicTx(1)), sign(t, testChain, dynamicTx(2))
	b, err := ParseBundle(bundleJSON(t, map[string]any{
		"txs": []string{tx1, tx2}, "blockNumber": "0x10", "minTimestamp": 1, "maxTimestamp": 2,
		"replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e", "refundPercent": 90,
		"refundRecipient": "0x00000000000000000000000000000000000000AB",
	}), OriginatorBundle, testRules())
	if err != nil {
		t.Fatal(err)
	}
	want := crypto.Keccak256Hash(append(b.Txs[0].Hash.Bytes(), b.Txs[1].Hash.Bytes()...))
	if b.Hash != want || b.Terms.BlockNumber != "0x10" || b.Refund.Percent != 90 ||
		b.Refund.Recipient != "0x00000000000000000000000000000000000000ab" {
		t.Fatalf("bundle %+v", b)
	}
	origin := common.HexToHash("0x1234")
	back, err := ParseBundle(bundleJSON(t, map[string]any{"txs": []string{origin.Hex(), tx1}}), SearcherBundle, testRules())
	if err != nil || !back.Txs[0].HashOnly || back.Txs[0].Hash != origin {
		t.Fatalf("backrun %+v %v", back, err)
	}
	cancel, err := ParseBundle(bundleJSON(t, map[string]any{"txs": []string{}, "replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}), SearcherBundle, testRules())
	if err != nil || !cancel.Cancel {
		t.Fatalf("cancel %+v %v", cancel, err)
	}
}

func TestParseBundleRejects(t *testing.T) {
	tx1 := sign(t, testChain, dynamicTx(1))
	hash := common.HexToHash("0x1234").Hex()
	many := make([]string, MaxBundleTxs+1)
	for i := range many {
		many[i] = sign(t, testChain, dynamicTx(uint64(i)))
	}
	var bigRaws []string
	for n := range 4 {
		big := dynamicTx(uint64(9 + n))
		big.Data = make([]byte, 100<<10)
		big.Gas = 2_000_000
		bigRaws = append(bigRaws, sign(t, testChain, big))
	}
	cases := []struct {
		name   string
		kind   BundleKind
		fields map[string]any
		want   string
	}{
		{"unknown field", OriginatorBundle, map[string]any{"txs": []string{tx1}, "extra": 1}, "unknown field"},
		{"not an object", OriginatorBundle, nil, "JSON object"},
		{"empty txs", OriginatorBundle, map[string]any{"txs": []string{}}, "txs is empty"},
		{"originator cannot cancel", OriginatorBundle, map[string]any{"txs": []string{}, "replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}, "txs is empty"},
		{"cancel with a block number", SearcherBundle, map[string]any{"txs": []string{}, "replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e", "blockNumber": "0x10"}, "takes only replacementUuid"},
		{"cancel with reverting hashes", SearcherBundle, map[string]any{"replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e", "revertingTxHashes": []string{hash}}, "takes only replacementUuid"},
		{"too many txs", OriginatorBundle, map[string]any{"txs": many}, "at most 100"},
		{"oversized bundle", OriginatorBundle, map[string]any{"txs": bigRaws}, "larger than"},
		{"hash in originator bundle", OriginatorBundle, map[string]any{"txs": []string{hash, tx1}}, "txs[0]"},
		{"hash not first", SearcherBundle, map[string]any{"txs": []string{tx1, hash}}, "txs[1]"},
		{"hash alone", SearcherBundle, map[string]any{"txs": []string{hash}}, "at least one transaction"},
		{"repeated tx", SearcherBundle, map[string]any{"txs": []string{tx1, tx1}}, "repeats"},
		{"bad uuid", SearcherBundle, map[string]any{"txs": []string{tx1}, "replacementUuid": "nope"}, "not a UUID"},
		{"bad block number", SearcherBundle, map[string]any{"txs": []string{tx1}, "blockNumber": "ten"}, "blockNumber"},
		{"min after max", SearcherBundle, map[string]any{"txs": []string{tx1}, "minTimestamp": 5, "maxTimestamp": 4}, "after maxTimestamp"},
		{"reverting hash not in bundle", SearcherBundle, map[string]any{"txs": []string{tx1}, "revertingTxHashes": []string{hash}}, "not a transaction of the bundle"},
		{"refund on searcher bundle", SearcherBundle, map[string]any{"txs": []string{tx1}, "refundPercent": 50}, "originator bundles"},
		{"refund percent 100", OriginatorBundle, map[string]any{"txs": []string{tx1}, "refundPercent": 100}, "not in 1..99"},
		{"refund recipient only", OriginatorBundle, map[string]any{"txs": []string{tx1}, "refundRecipient": "0x00000000000000000000000000000000000000ab"}, "needs refundPercent"},
		{"bad tx", SearcherBundle, map[string]any{"txs": []string{tx1, "0x02c0"}}, "txs[1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var raw json.RawMessage = []byte("null")
			if c.fields != nil {
				raw = bundleJSON(t, c.fields)
			}
			_, err := ParseBundle(raw, c.kind, testRules())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseRefundQuery(t *testing.T) {
	p, err := ParseRefundQuery("0x00000000000000000000000000000000000000Ab:25")
	if err != nil || p.Percent != 25 || p.Recipient != "0x00000000000000000000000000000000000000ab" {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "0xab:5", "0x00000000000000000000000000000000000000ab", "0x00000000000000000000000000000000000000ab:0",
		"0x00000000000000000000000000000000000000ab:100", "0x00000000000000000000000000000000000000ab:5.5", "00000000000000000000000000000000000000ab:5", ":50"} {
		if _, err := ParseRefundQuery(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseBundle(f *testing.F) {
	tx1 := sign(f, testChain, dynamicTx(1))
	f.Add([]byte(fmt.Sprintf(`{"txs":[%q],"blockNumber":"0x1","refundPercent":10}`, tx1)), true)
	f.Add([]byte(fmt.Sprintf(`{"txs":["0x%064x",%q],"replacementUuid":"0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}`, 1, tx1)), false)
	f.Add([]byte(`{"txs":[],"replacementUuid":"0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}`), false)
	f.Fuzz(func(t *testing.T, body []byte, originator bool) {
		kind := SearcherBundle
		if originator {
			kind = OriginatorBundle
		}
		b, err := ParseBundle(body, kind, testRules())
		if err != nil {
			return
		}
		if !b.Cancel && (len(b.Txs) == 0 || len(b.Txs) > MaxBundleTxs) {
			t.Fatalf("accepted %d txs", len(b.Txs))
		}
		for i, it := range b.Txs {
			if it.HashOnly && (i != 0 || originator) {
				t.Fatalf("bare hash at %d accepted", i)
			}
		}
	})
}

func FuzzParseRefundQuery(f *testing.F) {
	f.Add("0x00000000000000000000000000000000000000ab:25")
	f.Add(":")
	f.Add(":50")
	f.Fuzz(func(t *testing.T, q string) {
		p, err := ParseRefundQuery(q)
		if err == nil && (p.Percent <= 0 || p.Percent >= 100 || !common.IsHexAddress(p.Recipient)) {
			t.Fatalf("accepted %q as %+v", q, p)
		}
	})
}
