package stream

import (
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/topics"
)

// reply is a JSON-RPC response as a searcher reads it off the socket.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// dial opens a searcher socket with a fresh key of account n.
func (e *env) dial(t *testing.T, n int) *websocket.Conn {
	t.Helper()
	key, _ := e.key(t, n)
	conn, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// call sends msg as one text message and reads the next message, which
// must be a response.
func call(t *testing.T, conn *websocket.Conn, msg string) reply {
	t.Helper()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("write %s: %v", msg, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, raw, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("reply to %s: %v", msg, err)
	}
	var r reply
	if err := json.Unmarshal(raw, &r); err != nil || (r.Result == nil) == (r.Error == nil) {
		t.Fatalf("reply to %s is not a JSON-RPC response: %s", msg, raw)
	}
	return r
}

func subscribeMsg(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"eth_subscribe","params":["svc_partialPendingBundles"]}`
}

// subscribed calls eth_subscribe and returns the subscription id.
func subscribed(t *testing.T, conn *websocket.Conn) string {
	t.Helper()
	r := call(t, conn, subscribeMsg(`"probe"`))
	var id string
	if r.Error != nil || json.Unmarshal(r.Result, &id) != nil || id == "" || string(r.ID) != `"probe"` {
		t.Fatalf("eth_subscribe: id %s result %s error %+v", r.ID, r.Result, r.Error)
	}
	return id
}

// wantError checks r is error code with id wantID and a message naming
// the problem.
func wantError(t *testing.T, r reply, code int, wantID, naming string) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code || string(r.ID) != wantID || !strings.Contains(r.Error.Message, naming) {
		t.Fatalf("reply id %s result %s error %+v, want %d with id %s naming %q", r.ID, r.Result, r.Error, code, wantID, naming)
	}
}

// readNotification reads the next message, which must be a notification
// of subID carrying the hash.
func readNotification(t *testing.T, conn *websocket.Conn, subID, hash string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, raw, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var note struct {
		Method string
		Params struct {
			Subscription string
			Result       []struct{ Hash string }
		}
	}
	if err := json.Unmarshal(raw, &note); err != nil || note.Method != "eth_subscription" ||
		note.Params.Subscription != subID || len(note.Params.Result) != 1 || note.Params.Result[0].Hash != hash {
		t.Fatalf("notification %s, want subscription %s with %s", raw, subID, hash)
	}
}

// TestSubscribe: eth_subscribe ["svc_partialPendingBundles"] answers the
// id of the subscription the socket has had since it opened, the same on
// every call and on every socket of the relay; notifications carry it.
// Any other subscription, or other params, is -32602; eth_unsubscribe is
// -32601 and ends nothing.
func TestSubscribe(t *testing.T) {
	e := newEnv(t, Config{})
	conn, other := e.dial(t, 1), e.dial(t, 2)
	first := subscribed(t, conn)
	for _, id := range []string{`"again"`, `7`} {
		r := call(t, conn, subscribeMsg(id))
		if r.Error != nil || string(r.Result) != `"`+first+`"` || string(r.ID) != id {
			t.Fatalf("repeated eth_subscribe (id %s): id %s result %s error %+v, want %s", id, r.ID, r.Result, r.Error, first)
		}
	}
	if first != e.hub.SubscriptionID() || subscribed(t, other) != first {
		t.Fatalf("subscription %s, the stream's is %s", first, e.hub.SubscriptionID())
	}

	for _, tc := range []struct{ name, params, naming string }{
		{"other subscription", `["newHeads"]`, `the only subscription is ["svc_partialPendingBundles"]`},
		{"subscription with options", `[{"name":"svc_partialPendingBundles"}]`, `the only subscription is ["svc_partialPendingBundles"]`},
		{"two params", `["svc_partialPendingBundles",{}]`, "params must be an array of one element"},
		{"no params", `[]`, "params must be an array of one element"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, conn, `{"jsonrpc":"2.0","id":"s","method":"eth_subscribe","params":`+tc.params+`}`)
			wantError(t, r, -32602, `"s"`, tc.naming)
		})
	}

	r := call(t, conn, `{"jsonrpc":"2.0","id":"u","method":"eth_unsubscribe","params":["`+first+`"]}`)
	wantError(t, r, -32601, `"u"`, "eth_unsubscribe is not supported")
	e.hub.Broadcast([]byte(`[{"hash":"0x01"}]`))
	readNotification(t, conn, first, "0x01")
	readNotification(t, other, first, "0x01")
}

// TestMalformedRequestsKeepTheSocket: a message that is not a valid
// request gets the frame's error, with the request's id when it could be
// read, and the socket stays open and subscribed.
func TestMalformedRequestsKeepTheSocket(t *testing.T) {
	e := newEnv(t, Config{})
	conn := e.dial(t, 1)
	subID := subscribed(t, conn)
	for _, tc := range []struct {
		name, msg string
		code      int
		id        string
		naming    string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,`, -32700, "null", "not valid JSON"},
		{"text", `hello`, -32700, "null", "not valid JSON"},
		{"batch", `[` + subscribeMsg("1") + `]`, -32600, "null", "batch requests are not supported"},
		{"empty batch", `[]`, -32600, "null", "batch requests are not supported"},
		{"not an object", `"eth_subscribe"`, -32600, "null", "not a JSON object"},
		{"missing method", `{"jsonrpc":"2.0","id":3,"params":["svc_partialPendingBundles"]}`, -32600, "3", "method must be a non-empty string"},
		{"empty method", `{"jsonrpc":"2.0","id":3,"method":"","params":["x"]}`, -32600, "3", "method must be a non-empty string"},
		{"params not an array", `{"jsonrpc":"2.0","id":4,"method":"eth_subscribe","params":"svc_partialPendingBundles"}`, -32602, "4", "params must be an array of one element"},
		{"params an object", `{"jsonrpc":"2.0","id":"o","method":"eth_subscribe","params":{"0":"svc_partialPendingBundles"}}`, -32602, `"o"`, "params must be an array of one element"},
		{"missing params", `{"jsonrpc":"2.0","id":5,"method":"eth_subscribe"}`, -32602, "5", "params must be an array of one element"},
		{"wrong version", `{"jsonrpc":"1.0","id":6,"method":"eth_subscribe","params":["svc_partialPendingBundles"]}`, -32600, "6", `jsonrpc must be "2.0"`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"eth_subscribe","params":["svc_partialPendingBundles"]}`, -32600, "null", "id must be"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"eth_subscribe","params":["svc_partialPendingBundles"]}`, -32600, "null", "id must be"},
		{"unknown member", `{"jsonrpc":"2.0","id":8,"method":"eth_subscribe","params":["svc_partialPendingBundles"],"extra":1}`, -32600, "8", `unknown member "extra"`},
		{"repeated member", `{"jsonrpc":"2.0","id":9,"id":10,"method":"eth_subscribe","params":["svc_partialPendingBundles"]}`, -32600, "null", `member "id" appears twice`},
		{"unknown method", `{"jsonrpc":"2.0","id":11,"method":"eth_sendRawTransaction","params":["0x00"]}`, -32601, "11", `"eth_sendRawTransaction" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, call(t, conn, tc.msg), tc.code, tc.id, tc.naming)
			if got := subscribed(t, conn); got != subID || e.hub.Len() != 1 {
				t.Fatalf("after the refusal: subscription %s, %d sockets", got, e.hub.Len())
			}
		})
	}
	e.hub.Broadcast([]byte(`[{"hash":"0x02"}]`))
	readNotification(t, conn, subID, "0x02")
}

// TestRefusedBundlesPublishNothing: eth_sendBundle over the socket that
// breaks a rule is answered with the rule and publishes nothing; a valid
// one publishes exactly one searcher bundle.
func TestRefusedBundlesPublishNothing(t *testing.T) {
	cl, _ := kafkatest.Start(t)
	chainID := big.NewInt(1337)
	e := newEnvWith(t, Config{}, of.SearcherMethods{Rules: of.Rules{ChainID: chainID}, Producer: cl})
	conn := e.dial(t, 1)
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sign := func(chain *big.Int) string {
		to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
		tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chain), &types.DynamicFeeTx{
			ChainID: chain, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := tx.MarshalBinary()
		return hexutil.Encode(b)
	}
	send := func(id string, bundle any) reply {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "eth_sendBundle", "params": []any{bundle}})
		return call(t, conn, string(b))
	}
	good := sign(chainID)
	for _, tc := range []struct {
		name   string
		bundle any
		code   int
		naming string
	}{
		{"other chain", map[string]any{"txs": []string{sign(big.NewInt(1))}}, -32600, "txs[0]: chain id 1, this endpoint takes chain id 1337"},
		{"not a transaction", map[string]any{"txs": []string{"0x02c0"}}, -32600, "txs[0]"},
		{"refund fields", map[string]any{"txs": []string{good}, "refundPercent": 50}, -32602, "originator bundles"},
		{"unknown field", map[string]any{"txs": []string{good}, "extra": 1}, -32602, "unknown field"},
		{"empty", map[string]any{"txs": []string{}}, -32602, "txs is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, send(`"`+tc.name+`"`, tc.bundle), tc.code, `"`+tc.name+`"`, tc.naming)
		})
	}
	if recs := kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderflowBundles); len(recs) != 0 {
		t.Fatalf("refusals published %d records", len(recs))
	}
	r := send(`"ok"`, map[string]any{"txs": []string{good}})
	var res of.BundleResult
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.BundleHash == "" {
		t.Fatalf("valid bundle: %s %+v", r.Result, r.Error)
	}
	recs := kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderflowBundles)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	env, err := topics.Decode(recs[0].Value)
	if err != nil || env.Type != topics.TypeOrderflowSearcherBundle || !strings.Contains(string(env.Data), res.BundleHash) {
		t.Fatalf("record %s: %v", recs[0].Value, err)
	}
}

// TestPingKeepalive: the server pings every PingInterval; a client that
// answers with pongs stays connected long after 2.5 intervals of its own
// silence, while a client that answers nothing is closed.
func TestPingKeepalive(t *testing.T) {
	const interval = 200 * time.Millisecond
	e := newEnv(t, Config{PingInterval: interval})
	answering, silent := e.dial(t, 1), e.dial(t, 2)
	waitSockets(t, e.hub, 2)

	var pings atomic.Int32
	answering.SetPingHandler(func(data string) error {
		pings.Add(1)
		return answering.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
	})
	msgs := make(chan []byte, 16)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, msg, err := answering.ReadMessage()
			if err != nil {
				readErr <- err
				return
			}
			msgs <- msg
		}
	}()

	var silentPings atomic.Int32
	silent.SetPingHandler(func(string) error { silentPings.Add(1); return nil })
	// Nothing but pings comes to the silent client: its read ends when the
	// server closes it.
	_ = silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, _, err := silent.ReadMessage()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the silent client is still open after %d pings", silentPings.Load())
	}
	if silentPings.Load() == 0 {
		t.Fatalf("the silent client was closed (%v) before any ping", err)
	}
	waitSockets(t, e.hub, 1)

	// Six pings are more than two read deadlines (2.5 intervals) of a
	// client that sends nothing but pongs.
	deadline := time.Now().Add(30 * time.Second)
	for pings.Load() < 6 {
		select {
		case err := <-readErr:
			t.Fatalf("the answering client was closed after %d pings: %v", pings.Load(), err)
		case msg := <-msgs:
			t.Fatalf("unexpected message %s", msg)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pings, want 6 at one every %s", pings.Load(), interval)
		}
	}
	if e.hub.Len() != 1 {
		t.Fatalf("%d sockets, want the answering one", e.hub.Len())
	}
	e.hub.Broadcast([]byte(`[{"hash":"0x03"}]`))
	select {
	case msg := <-msgs:
		if !strings.Contains(string(msg), `"0x03"`) {
			t.Fatalf("notification %s", msg)
		}
	case err := <-readErr:
		t.Fatalf("the answering client was closed: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no notification on the answering client")
	}
}
