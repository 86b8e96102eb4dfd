package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gorilla/websocket"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/kafka"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

func postJSON(t *testing.T, url string, body any, header map[string]string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out
}

func rpc(method string, param any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": []any{param}}
}

// apiKey logs in to the orderflow accounts with dev key i.
func apiKey(t *testing.T, base string, i int) string {
	t.Helper()
	key, _ := crypto.HexToECDSA(devchain.DevKeys[i])
	addr := strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
	ch := getJSON(t, base+"/v1/auth/challenge?address="+addr)["data"].(map[string]any)
	raw, _ := json.Marshal(ch["typedData"])
	var c of.Challenge
	_ = json.Unmarshal(raw, &c)
	digest, err := c.Digest()
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := crypto.Sign(digest, key)
	status, out := postJSON(t, base+"/v1/auth/verify", map[string]any{"address": addr, "nonce": ch["nonce"], "signature": hexutil.Encode(sig)}, nil)
	if status != 200 {
		t.Fatalf("verify: %d %v", status, out)
	}
	return out["data"].(map[string]any)["apiKey"].(string)
}

func signed(t *testing.T, i int, nonce uint64, to common.Address, value, tip *big.Int) string {
	t.Helper()
	key, _ := crypto.HexToECDSA(devchain.DevKeys[i])
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: tip, GasFeeCap: big.NewInt(200e9), Gas: 21000, To: &to, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tx.MarshalBinary()
	return hexutil.Encode(b)
}

// TestOrderflowEndToEnd: an originator sends a transaction, a searcher
// sees it decoded on its socket and backruns it, the dev builder includes
// both, tracking shows INCLUDED, and the refund goes pending → paid →
// confirmed. The chain makes blocks only when the test asks (evm_mine), so
// no step depends on how fast another one was: the block that includes
// the backrun is made once the builder holds it.
func TestOrderflowEndToEnd(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"DEV_BLOCK_INTERVAL": "0", "REFUND_CONFIRMATIONS": "1"})
	defer s.stop()
	a := s.Addresses().Orderflow
	originatorKey, searcherKey := apiKey(t, a.Orderflow, 1), apiKey(t, a.Orderflow, 2)

	ws, _, err := websocket.DefaultDialer.Dial(a.SearcherWS+"/v1/"+searcherKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.WriteJSON(rpc("eth_subscribe", "svc_partialPendingBundles"))
	var sub map[string]any
	_ = ws.ReadJSON(&sub)
	subID, _ := sub["result"].(string)
	if subID == "" {
		t.Fatalf("subscribe: %v", sub)
	}

	recipient := common.HexToAddress("0x00000000000000000000000000000000000000f1")
	origin := signed(t, 1, 0, common.HexToAddress("0x00000000000000000000000000000000000000e1"), big.NewInt(1), big.NewInt(1e9))
	status, out := postJSON(t, a.Originator+"/v1/"+originatorKey+"?refund="+recipient.Hex()+":50", rpc("eth_sendRawTransaction", origin), nil)
	if status != 200 || out["result"] == nil {
		t.Fatalf("send: %d %v", status, out)
	}
	txHash := out["result"].(string)
	// The same transaction again is accepted once.
	if _, again := postJSON(t, a.Originator+"/v1", rpc("eth_sendRawTransaction", origin), nil); again["result"] != txHash {
		t.Fatalf("resend: %v", again)
	}

	var note struct {
		Method string
		Params struct {
			Subscription string
			Result       []map[string]any
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(poll.Timeout))
	if err := ws.ReadJSON(&note); err != nil {
		t.Fatal(err)
	}
	if note.Method != "eth_subscription" || note.Params.Subscription != subID || len(note.Params.Result) != 1 ||
		note.Params.Result[0]["hash"] != txHash || note.Params.Result[0]["r"] != nil {
		t.Fatalf("notification %+v", note)
	}

	// Backrun over the socket: pay the builder with a high priority fee.
	backrun := signed(t, 2, 0, common.HexToAddress("0x00000000000000000000000000000000000000e2"), big.NewInt(0), big.NewInt(50e9))
	_ = ws.WriteJSON(rpc("eth_sendBundle", map[string]any{"txs": []string{txHash, backrun}}))
	var sent map[string]any
	if err := ws.ReadJSON(&sent); err != nil {
		t.Fatal(err)
	}
	bundleHash, _ := sent["result"].(map[string]any)["bundleHash"].(string)
	if bundleHash == "" {
		t.Fatalf("sendBundle: %v", sent)
	}

	bundleStatus := func() string {
		return getJSON(t, a.Orderflow+"/v1/bundle?hash="+bundleHash)["data"].(map[string]any)["status"].(string)
	}
	poll.Until(t, "bundle FORWARDED", func() bool { return bundleStatus() == "FORWARDED" })
	mine := func() {
		t.Helper()
		if st, out := postJSON(t, a.DevBuilder, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "evm_mine", "params": []any{}}, nil); st != 200 || out["result"] == nil {
			t.Fatalf("evm_mine: %d %v", st, out)
		}
	}
	mine()
	poll.Until(t, "tx INCLUDED", func() bool {
		return getJSON(t, a.Orderflow+"/v1/tx/"+txHash)["data"].(map[string]any)["status"] == "INCLUDED"
	})
	poll.Until(t, "bundle INCLUDED", func() bool { return bundleStatus() == "INCLUDED" })

	// receivedAt is one instant in one unit: the tracking reads answer the
	// number the submission records carry.
	for _, sub := range []struct{ topic, hash, read string }{
		{topics.OrderflowTxs, txHash, "/v1/tx/" + txHash},
		{topics.OrderflowBundles, bundleHash, "/v1/bundle?hash=" + bundleHash},
	} {
		version, recorded := s.submissionReceivedAt(t, sub.topic, sub.hash)
		read, _ := getJSON(t, a.Orderflow+sub.read)["data"].(map[string]any)["receivedAt"].(float64)
		if version != topics.OrderflowSubmissionVersion || recorded == 0 || int64(read) != recorded {
			t.Errorf("%s: record version %d receivedAt %d, %s receivedAt %.0f", sub.hash, version, recorded, sub.read, read)
		}
	}

	refund := func(list string) map[string]any {
		d := getJSON(t, a.Orderflow+"/v1/"+originatorKey+"/refunds")["data"].(map[string]any)
		if l := d[list].([]any); len(l) == 1 {
			return l[0].(map[string]any)
		}
		return nil
	}
	// One confirmation is needed before the refund is paid: it stays
	// PENDING until the next block.
	poll.Until(t, "refund PENDING", func() bool { rf := refund("pending"); return rf != nil && rf["status"] == "PENDING" })
	if rf := refund("pending"); rf["payoutTxHash"] != nil && rf["payoutTxHash"] != "" {
		t.Fatalf("pending refund already paid: %v", rf)
	}
	mine()
	poll.Until(t, "refund PAID", func() bool { rf := refund("pending"); return rf != nil && rf["status"] == "PAID" })
	mine()
	poll.Until(t, "refund CONFIRMED", func() bool { return refund("confirmed") != nil })
	rf := refund("confirmed")
	if rf["recipient"] != strings.ToLower(recipient.Hex()) || rf["percent"] != float64(50) || rf["amountWei"] == "0" || rf["payoutTxHash"] == "" {
		t.Fatalf("refund %v", rf)
	}
	owned := getJSON(t, a.Orderflow+"/v1/"+originatorKey+"/tx/"+txHash)["data"].(map[string]any)
	if owned["refundPolicy"].(map[string]any)["percent"] != float64(50) {
		t.Fatalf("owned tx %v", owned)
	}
	if other := getJSON(t, a.Orderflow+"/v1/"+searcherKey+"/tx/"+txHash); other["success"] != false {
		t.Fatalf("another key read the tx: %v", other)
	}

	// Revoking the searcher's key closes its socket once the relay's
	// re-check finds the key gone (ORDERFLOW_KEY_TTL); the read waits as
	// long as any wait of a test, as only a broken run comes near it.
	status, _ = postJSON(t, a.Orderflow+"/v1/auth/api-keys/revoke", map[string]any{}, map[string]string{"Authorization": "Bearer " + searcherKey})
	if status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	_ = ws.SetReadDeadline(time.Now().Add(poll.Timeout))
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("socket after revoke: %v", err)
	}
	if st, _ := postJSON(t, a.Searcher+"/v1/"+searcherKey, rpc("eth_cancelBundle", map[string]any{"replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}), nil); st != 401 {
		t.Fatalf("revoked key answered %d", st)
	}
}

// submissionReceivedAt reads topic from its start until the submission
// record of hash (a transaction's or a bundle's), and returns its payload
// version and receivedAt.
func (s *running) submissionReceivedAt(t *testing.T, topic, hash string) (int, int64) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: s.brokers, ClientID: "submission-reader"},
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var version int
	var receivedAt int64
	for ctx.Err() == nil && receivedAt == 0 {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			e, err := kafka.DecodeRecord(r)
			if err != nil {
				return
			}
			var p struct {
				Hash, BundleHash string
				ReceivedAt       int64
			}
			if json.Unmarshal(e.Data, &p) == nil && (p.Hash == hash || p.BundleHash == hash) {
				version, receivedAt = e.Version, p.ReceivedAt
			}
		})
	}
	return version, receivedAt
}
