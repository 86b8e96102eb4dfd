package ingress_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/topics"
)

var devChain = big.NewInt(1337)

// wallet signs transactions for the dev chain with its own key.
type wallet struct {
	key  *ecdsa.PrivateKey
	addr string // lower-case 0x hex
}

func newWallet(t *testing.T) wallet {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return wallet{key: key, addr: strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())}
}

// tx returns the signed raw form of a transfer with nonce on chain, and
// its hash.
func (w wallet) tx(t *testing.T, chain *big.Int, nonce uint64) (raw, hash string) {
	t.Helper()
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	tx, err := types.SignNewTx(w.key, types.LatestSignerForChainID(chain), &types.DynamicFeeTx{
		ChainID: chain, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(b), tx.Hash().Hex()
}

// badSignature returns a transfer signed by w whose s value is zero: it
// decodes, and recovers no sender.
func (w wallet) badSignature(t *testing.T, nonce uint64) string {
	t.Helper()
	raw, _ := w.tx(t, devChain, nonce)
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(hexutil.MustDecode(raw)); err != nil {
		t.Fatal(err)
	}
	v, r, _ := tx.RawSignatureValues()
	signer := types.LatestSignerForChainID(devChain)
	bad, err := tx.WithSignature(signer, append(append(r.FillBytes(make([]byte, 32)), make([]byte, 32)...), byte(v.Uint64())))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bad.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(b)
}

// published is one record the edges wrote, with its envelope decoded.
type published struct {
	rec *kgo.Record
	env topics.Envelope
}

// published returns every record of topic, decoded.
func (e *orderflowEdges) published(t *testing.T, topic string) []published {
	t.Helper()
	var out []published
	for _, r := range kafkatest.ReadToEnd(t.Context(), t, e.kafka, topic) {
		env, err := topics.Decode(r.Value)
		if err != nil {
			t.Fatalf("record of %s: %v", topic, err)
		}
		out = append(out, published{rec: r, env: env})
	}
	return out
}

// withKey returns the records whose key is key.
func withKey(recs []published, key string) []published {
	var out []published
	for _, r := range recs {
		if string(r.rec.Key) == key {
			out = append(out, r)
		}
	}
	return out
}

func decodeData[T any](t *testing.T, p published) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(p.env.Data, &v); err != nil {
		t.Fatalf("%s: %v", p.env.Type, err)
	}
	return v
}

// wantResult checks r is an HTTP 200 success and returns its result.
func wantResult(t *testing.T, r rpcReply) json.RawMessage {
	t.Helper()
	if r.status != http.StatusOK || r.body.Error != nil || r.body.Result == nil {
		t.Fatalf("HTTP %d, error %+v, result %s", r.status, r.body.Error, r.body.Result)
	}
	return r.body.Result
}

// wantRefusal checks r is the JSON-RPC error code with HTTP status and a
// message naming the problem.
func wantRefusal(t *testing.T, r rpcReply, status, code int, naming string) {
	t.Helper()
	if r.status != status || r.body.Error == nil || r.body.Error.Code != code || !strings.Contains(r.body.Error.Message, naming) {
		t.Fatalf("HTTP %d, error %+v, result %s; want HTTP %d, %d naming %q", r.status, r.body.Error, r.body.Result, status, code, naming)
	}
}

// TestOriginatorMethodsPublishOnce: each originator method, on the open
// endpoint and on the partner one, is accepted on its first call and
// published once: its record carries the transaction as sent, the
// method, the partner (none on the open endpoint) and the default refund
// to the sender; the same call again answers the same hash and publishes
// nothing, as does the same transaction through another method.
func TestOriginatorMethodsPublishOnce(t *testing.T) {
	e := newOrderflowEdges(t)
	const partner = "0x00000000000000000000000000000000000000a1"
	key, _, err := e.store.Issue(t.Context(), partner)
	if err != nil {
		t.Fatal(err)
	}
	w := newWallet(t)
	var nonce uint64
	next := func() (string, string) { nonce++; return w.tx(t, devChain, nonce) }
	for _, tc := range []struct {
		method     string
		path       string
		originator string
		param      func(raw string) any
	}{
		{"eth_sendRawTransaction", "/v1", "", func(raw string) any { return raw }},
		{"eth_sendRawTransaction", "/v1/" + key, partner, func(raw string) any { return raw }},
		{"eth_sendPrivateRawTransaction", "/v1", "", func(raw string) any { return raw }},
		{"eth_sendPrivateRawTransaction", "/v1/" + key, partner, func(raw string) any { return raw }},
		{"eth_sendPrivateTransaction", "/v1", "", func(raw string) any {
			return map[string]any{"tx": raw, "maxBlockNumber": "0x10", "preferences": map[string]any{}}
		}},
		{"eth_sendPrivateTransaction", "/v1/" + key, partner, func(raw string) any { return map[string]any{"tx": raw} }},
	} {
		name := tc.method + " open"
		if tc.originator != "" {
			name = tc.method + " partner"
		}
		t.Run(name, func(t *testing.T) {
			raw, hash := next()
			for range 2 {
				var got string
				if err := json.Unmarshal(wantResult(t, callRPC(t, e.originator.URL+tc.path, tc.method, tc.param(raw), nil)), &got); err != nil || got != hash {
					t.Fatalf("result %q, want %s", got, hash)
				}
			}
			recs := withKey(e.published(t, topics.OrderflowTxs), hash)
			if len(recs) != 1 || recs[0].env.Type != topics.TypeOrderflowTx {
				t.Fatalf("%d records of %s, want one orderflow.tx", len(recs), hash)
			}
			m := decodeData[topics.OrderflowTx](t, recs[0])
			if m.Hash != hash || m.Raw != raw || m.Method != tc.method || m.Originator != tc.originator || m.Tx.From != w.addr ||
				m.Refund != (topics.RefundPolicy{Recipient: w.addr, Percent: 90}) {
				t.Fatalf("record %s", recs[0].env.Data)
			}
		})
	}

	t.Run("same tx through another method", func(t *testing.T) {
		raw, hash := next()
		wantResult(t, callRPC(t, e.originator.URL+"/v1", "eth_sendRawTransaction", raw, nil))
		if got := wantResult(t, callRPC(t, e.originator.URL+"/v1/"+key, "eth_sendPrivateTransaction", map[string]any{"tx": raw}, nil)); string(got) != `"`+hash+`"` {
			t.Fatalf("result %s, want %s", got, hash)
		}
		recs := withKey(e.published(t, topics.OrderflowTxs), hash)
		if len(recs) != 1 || decodeData[topics.OrderflowTx](t, recs[0]).Method != "eth_sendRawTransaction" {
			t.Fatalf("%d records of %s, want the first call's only", len(recs), hash)
		}
	})

	for _, path := range []string{"/v1", "/v1/" + key} {
		t.Run("eth_sendBundle "+map[bool]string{true: "open", false: "partner"}[path == "/v1"], func(t *testing.T) {
			raw1, h1 := next()
			raw2, h2 := next()
			want := crypto.Keccak256Hash(common.HexToHash(h1).Bytes(), common.HexToHash(h2).Bytes()).Hex()
			bundle := map[string]any{"txs": []string{raw1, raw2}, "blockNumber": "0x20"}
			for range 2 {
				var res of.BundleResult
				if err := json.Unmarshal(wantResult(t, callRPC(t, e.originator.URL+path, "eth_sendBundle", bundle, nil)), &res); err != nil || res.BundleHash != want {
					t.Fatalf("result %+v, want bundleHash %s", res, want)
				}
			}
			recs := withKey(e.published(t, topics.OrderflowBundles), want)
			if len(recs) != 1 || recs[0].env.Type != topics.TypeOrderflowOriginatorBundle {
				t.Fatalf("%d records of bundle %s, want one originator bundle", len(recs), want)
			}
			b := decodeData[topics.OrderflowOriginatorBundle](t, recs[0])
			originator := ""
			if path != "/v1" {
				originator = partner
			}
			if b.BundleHash != want || len(b.Txs) != 2 || b.Txs[0].Hash != h1 || b.Txs[1].Raw != raw2 || b.Terms.BlockNumber != "0x20" ||
				b.Originator != originator || b.Refund != (topics.RefundPolicy{Recipient: w.addr, Percent: 90}) {
				t.Fatalf("record %s", recs[0].env.Data)
			}
			// The bundle's transactions are not published on their own.
			if n := len(withKey(e.published(t, topics.OrderflowTxs), h1)); n != 0 {
				t.Fatalf("%d orderflow.tx records of a bundle's transaction", n)
			}
		})
	}
}

// TestOriginatorRefundQuery: ?refund=<address>:<percent> sets the refund
// of a transaction and overrides the refund fields of a bundle body;
// without it the body's fields hold. A bad query refuses the call and
// publishes nothing.
func TestOriginatorRefundQuery(t *testing.T) {
	e := newOrderflowEdges(t)
	w := newWallet(t)
	const bodyTo, queryTo = "0x00000000000000000000000000000000000000b1", "0x00000000000000000000000000000000000000C2"
	queried := topics.RefundPolicy{Recipient: strings.ToLower(queryTo), Percent: 50}
	var nonce uint64
	bundle := func() (map[string]any, string) {
		t.Helper()
		nonce++
		raw, h := w.tx(t, devChain, nonce)
		return map[string]any{"txs": []string{raw}, "refundPercent": 20, "refundRecipient": bodyTo},
			crypto.Keccak256Hash(common.HexToHash(h).Bytes()).Hex()
	}
	refundOf := func(topic, key string) topics.RefundPolicy {
		t.Helper()
		recs := withKey(e.published(t, topic), key)
		if len(recs) != 1 {
			t.Fatalf("%d records of %s", len(recs), key)
		}
		if topic == topics.OrderflowTxs {
			return decodeData[topics.OrderflowTx](t, recs[0]).Refund
		}
		return decodeData[topics.OrderflowOriginatorBundle](t, recs[0]).Refund
	}

	body, hash := bundle()
	wantResult(t, callRPC(t, e.originator.URL+"/v1?refund="+queryTo+":50", "eth_sendBundle", body, nil))
	if got := refundOf(topics.OrderflowBundles, hash); got != queried {
		t.Fatalf("bundle with query and body fields: refund %+v, want the query's %+v", got, queried)
	}
	body, hash = bundle()
	wantResult(t, callRPC(t, e.originator.URL+"/v1", "eth_sendBundle", body, nil))
	if got, want := refundOf(topics.OrderflowBundles, hash), (topics.RefundPolicy{Recipient: bodyTo, Percent: 20}); got != want {
		t.Fatalf("bundle with body fields: refund %+v, want %+v", got, want)
	}
	nonce++
	raw, txHash := w.tx(t, devChain, nonce)
	wantResult(t, callRPC(t, e.originator.URL+"/v1?refund="+queryTo+":50", "eth_sendPrivateRawTransaction", raw, nil))
	if got := refundOf(topics.OrderflowTxs, txHash); got != queried {
		t.Fatalf("transaction with query: refund %+v, want %+v", got, queried)
	}

	before := len(e.published(t, topics.OrderflowTxs)) + len(e.published(t, topics.OrderflowBundles))
	nonce++
	raw, _ = w.tx(t, devChain, nonce)
	body, _ = bundle()
	for _, tc := range []struct{ name, query, naming string }{
		{"percent 100", queryTo + ":100", "not in 1..99"},
		{"percent 0", queryTo + ":0", "not in 1..99"},
		{"no recipient", ":50", "not <address>:<percent>"},
		{"no percent", queryTo, "not <address>:<percent>"},
		{"fractional percent", queryTo + ":5.5", "not an integer"},
		{"not an address", "0xab:5", "not a 0x address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, callRPC(t, e.originator.URL+"/v1?refund="+tc.query, "eth_sendRawTransaction", raw, nil), http.StatusOK, -32602, tc.naming)
			wantRefusal(t, callRPC(t, e.originator.URL+"/v1?refund="+tc.query, "eth_sendBundle", body, nil), http.StatusOK, -32602, tc.naming)
		})
	}
	if after := len(e.published(t, topics.OrderflowTxs)) + len(e.published(t, topics.OrderflowBundles)); after != before {
		t.Fatalf("refused calls published %d records", after-before)
	}
}

// TestOriginatorRefusalsPublishNothing: calls that break a rule are
// answered with the rule's code and a message naming it, and publish
// nothing.
func TestOriginatorRefusalsPublishNothing(t *testing.T) {
	e := newOrderflowEdges(t)
	w := newWallet(t)
	good, _ := w.tx(t, devChain, 1)
	other, _ := w.tx(t, big.NewInt(1), 1)
	badSig := w.badSignature(t, 2)
	many := make([]string, of.MaxBundleTxs+1)
	for i := range many {
		many[i], _ = w.tx(t, devChain, uint64(10+i))
	}
	for _, tc := range []struct {
		name, path, method string
		param              any
		status, code       int
		naming             string
	}{
		{"other chain", "/v1", "eth_sendRawTransaction", other, 200, -32600, "chain id 1, this endpoint takes chain id 1337"},
		{"bad signature", "/v1", "eth_sendPrivateRawTransaction", badSig, 200, -32600, "signature does not recover a sender"},
		{"not hex", "/v1", "eth_sendRawTransaction", "0xzz", 200, -32600, "not valid hex"},
		{"not a string", "/v1", "eth_sendRawTransaction", map[string]any{"tx": good}, 200, -32602, "0x hex string"},
		{"private tx unknown field", "/v1", "eth_sendPrivateTransaction", map[string]any{"tx": good, "hint": 1}, 200, -32602, `{"tx": "0x..."}`},
		{"private tx without tx", "/v1", "eth_sendPrivateTransaction", map[string]any{}, 200, -32602, `{"tx": "0x..."}`},
		{"null tx", "/v1", "eth_sendRawTransaction", nil, 200, -32602, "0x hex string"},
		{"private tx maxBlockNumber not a number", "/v1", "eth_sendPrivateTransaction", map[string]any{"tx": good, "maxBlockNumber": "soon"}, 200, -32602, `maxBlockNumber "soon" is not a block number`},
		{"private tx negative maxBlockNumber", "/v1", "eth_sendPrivateTransaction", map[string]any{"tx": good, "maxBlockNumber": -1}, 200, -32602, "maxBlockNumber -1 is not a block number"},
		{"private tx preferences not an object", "/v1", "eth_sendPrivateTransaction", map[string]any{"tx": good, "preferences": "fast"}, 200, -32602, "preferences must be an object"},
		{"bundle of other chain", "/v1", "eth_sendBundle", map[string]any{"txs": []string{good, other}}, 200, -32600, "txs[1]: chain id 1"},
		{"bundle too large", "/v1", "eth_sendBundle", map[string]any{"txs": many}, 200, -32602, "101 txs, at most 100"},
		{"bundle starting with a hash", "/v1", "eth_sendBundle", map[string]any{"txs": []string{common.Hash{1}.Hex(), good}}, 200, -32600, "txs[0]"},
		{"bundle repeating a tx", "/v1", "eth_sendBundle", map[string]any{"txs": []string{good, good}}, 200, -32602, "repeats transaction"},
		{"bundle cancel", "/v1", "eth_sendBundle", map[string]any{"txs": []string{}, "replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}, 200, -32602, "txs is empty"},
		{"group on the open endpoint", "/v1", "eth_sendBundle", map[string]any{"txs": []string{good}, "replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}, 200, -32602, "replacementUuid needs the partner endpoint"},
		{"unknown method", "/v1", "eth_call", good, 200, -32601, `"eth_call" not found`},
		{"subscribe", "/v1", "eth_subscribe", "svc_partialPendingBundles", 200, -32601, `"eth_subscribe" not found`},
		{"unknown path", "/v2", "eth_sendRawTransaction", good, 404, -32600, "use /v1 or /v1/<API_KEY>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, callRPC(t, e.originator.URL+tc.path, tc.method, tc.param, nil), tc.status, tc.code, tc.naming)
		})
	}
	if n := len(e.published(t, topics.OrderflowTxs)) + len(e.published(t, topics.OrderflowBundles)); n != 0 {
		t.Fatalf("refused calls published %d records", n)
	}
}

// TestOriginatorReplacementGroup: a partner originator's bundle with a
// replacementUuid is published at every call, a version sent again too,
// on the group's key, so the versions stay in order on one partition.
func TestOriginatorReplacementGroup(t *testing.T) {
	e := newOrderflowEdges(t)
	const partner, group = "0x00000000000000000000000000000000000000a1", "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"
	key, _, err := e.store.Issue(t.Context(), partner)
	if err != nil {
		t.Fatal(err)
	}
	w := newWallet(t)
	rawA, _ := w.tx(t, devChain, 1)
	rawB, _ := w.tx(t, devChain, 2)
	var sent []string
	for _, raw := range []string{rawA, rawB, rawA} {
		var res of.BundleResult
		r := callRPC(t, e.originator.URL+"/v1/"+key, "eth_sendBundle", map[string]any{"txs": []string{raw}, "replacementUuid": group}, nil)
		if err := json.Unmarshal(wantResult(t, r), &res); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res.BundleHash)
	}
	if sent[0] != sent[2] || sent[0] == sent[1] {
		t.Fatalf("bundle hashes %v", sent)
	}
	recs := withKey(e.published(t, topics.OrderflowBundles), partner+"/"+group)
	if len(recs) != 3 {
		t.Fatalf("%d records on the group's key, want 3", len(recs))
	}
	for i, p := range recs {
		b := decodeData[topics.OrderflowOriginatorBundle](t, p)
		if p.env.Type != topics.TypeOrderflowOriginatorBundle || b.BundleHash != sent[i] || b.ReplacementUUID != group ||
			b.Originator != partner || p.rec.Partition != recs[0].rec.Partition || i > 0 && p.env.ID == recs[0].env.ID {
			t.Fatalf("record %d on partition %d: %s %s", i, p.rec.Partition, p.env.ID, p.env.Data)
		}
	}
}

// TestSearcherBundlesOverHTTP: a searcher's eth_sendBundle is published
// with the searcher and, for a backrun, the transaction it backruns;
// versions of a replacement group, its cancellation by an empty bundle
// and by eth_cancelBundle share the group's key, so they stay in order on
// one partition; cancelling a group never seen is accepted as such a
// record; refusals and the stream's methods publish nothing.
func TestSearcherBundlesOverHTTP(t *testing.T) {
	e := newOrderflowEdges(t)
	const searcher = "0x00000000000000000000000000000000000000c1"
	key, _, err := e.store.Issue(t.Context(), searcher)
	if err != nil {
		t.Fatal(err)
	}
	url := e.searcher.URL + "/v1/" + key
	w := newWallet(t)
	send := func(bundle map[string]any) string {
		t.Helper()
		var res of.BundleResult
		if err := json.Unmarshal(wantResult(t, callRPC(t, url, "eth_sendBundle", bundle, nil)), &res); err != nil {
			t.Fatal(err)
		}
		return res.BundleHash
	}
	searcherBundle := func(p published) topics.OrderflowSearcherBundle {
		t.Helper()
		if p.env.Type != topics.TypeOrderflowSearcherBundle {
			t.Fatalf("record of type %s", p.env.Type)
		}
		return decodeData[topics.OrderflowSearcherBundle](t, p)
	}

	raw1, h1 := w.tx(t, devChain, 1)
	plain := send(map[string]any{"txs": []string{raw1}})
	if want := crypto.Keccak256Hash(common.HexToHash(h1).Bytes()).Hex(); plain != want {
		t.Fatalf("bundleHash %s, want %s", plain, want)
	}
	recs := withKey(e.published(t, topics.OrderflowBundles), plain)
	if len(recs) != 1 {
		t.Fatalf("%d records of %s", len(recs), plain)
	}
	if sb := searcherBundle(recs[0]); sb.Searcher != searcher || sb.BundleHash != plain || sb.Cancel || len(sb.Txs) != 1 || sb.Txs[0].Raw != raw1 || sb.BackrunOf != "" {
		t.Fatalf("record %s", recs[0].env.Data)
	}

	origin := common.Hash{0xab}.Hex()
	raw2, _ := w.tx(t, devChain, 2)
	backrun := send(map[string]any{"txs": []string{origin, raw2}})
	if sb := searcherBundle(withKey(e.published(t, topics.OrderflowBundles), backrun)[0]); sb.BackrunOf != origin || sb.Txs[0].Raw != "" {
		t.Fatalf("backrun record %+v", sb)
	}

	const group, unknown = "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e", "9d1c6a55-3f0e-4d7b-8a2c-5e6f7a8b9c0d"
	raw3, _ := w.tx(t, devChain, 3)
	raw4, _ := w.tx(t, devChain, 4)
	v1 := send(map[string]any{"txs": []string{raw3}, "replacementUuid": group})
	v2 := send(map[string]any{"txs": []string{raw4}, "replacementUuid": group})
	if v1 == v2 || v1 == "" || v2 == "" {
		t.Fatalf("versions %s and %s", v1, v2)
	}
	if h := send(map[string]any{"txs": []string{}, "replacementUuid": group}); h != "" {
		t.Fatalf("cancelling by an empty bundle answered bundleHash %q", h)
	}
	if r := callRPC(t, url, "eth_cancelBundle", map[string]any{"replacementUuid": group}, nil); string(wantResult(t, r)) != "null" {
		t.Fatalf("eth_cancelBundle answered %s", r.body.Result)
	}
	groupRecs := withKey(e.published(t, topics.OrderflowBundles), searcher+"/"+group)
	if len(groupRecs) != 4 {
		t.Fatalf("%d records of the group, want 2 versions and 2 cancellations", len(groupRecs))
	}
	for i, want := range []string{v1, v2, "", ""} {
		sb := searcherBundle(groupRecs[i])
		if sb.BundleHash != want || sb.Cancel != (want == "") || sb.ReplacementUUID != group || groupRecs[i].rec.Partition != groupRecs[0].rec.Partition {
			t.Fatalf("group record %d on partition %d: %s", i, groupRecs[i].rec.Partition, groupRecs[i].env.Data)
		}
	}

	if r := callRPC(t, url, "eth_cancelBundle", map[string]any{"replacementUuid": unknown}, nil); string(wantResult(t, r)) != "null" {
		t.Fatalf("cancel of an unknown group answered %s", r.body.Result)
	}
	cancels := withKey(e.published(t, topics.OrderflowBundles), searcher+"/"+unknown)
	if len(cancels) != 1 {
		t.Fatalf("%d records of the unknown group", len(cancels))
	}
	if sb := searcherBundle(cancels[0]); !sb.Cancel || sb.BundleHash != "" || len(sb.Txs) != 0 || sb.Searcher != searcher {
		t.Fatalf("cancel record %s", cancels[0].env.Data)
	}

	before := len(e.published(t, topics.OrderflowBundles))
	raw5, _ := w.tx(t, devChain, 5)
	other, _ := w.tx(t, big.NewInt(1), 6)
	for _, tc := range []struct {
		name, method string
		param        any
		code         int
		naming       string
	}{
		{"refund fields", "eth_sendBundle", map[string]any{"txs": []string{raw5}, "refundPercent": 50}, -32602, "for originator bundles"},
		{"other chain", "eth_sendBundle", map[string]any{"txs": []string{raw5, other}}, -32600, "txs[1]: chain id 1"},
		{"hash alone", "eth_sendBundle", map[string]any{"txs": []string{origin}}, -32602, "at least one transaction after the originator hash"},
		{"cancel without a UUID", "eth_cancelBundle", map[string]any{"replacementUuid": "group-1"}, -32602, "not a UUID"},
		{"empty bundle without a group", "eth_sendBundle", map[string]any{"txs": []string{}}, -32602, "txs is empty"},
		{"subscribe", "eth_subscribe", "svc_partialPendingBundles", -32601, "needs the WebSocket endpoint"},
		{"unsubscribe", "eth_unsubscribe", "0x01", -32601, "needs the WebSocket endpoint"},
		{"originator method", "eth_sendRawTransaction", raw5, -32601, "is not supported here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantRefusal(t, callRPC(t, url, tc.method, tc.param, nil), http.StatusOK, tc.code, tc.naming)
		})
	}
	if after := len(e.published(t, topics.OrderflowBundles)); after != before {
		t.Fatalf("refused calls published %d records", after-before)
	}
	if n := len(e.published(t, topics.OrderflowTxs)); n != 0 {
		t.Fatalf("searcher calls published %d originator transactions", n)
	}
}
