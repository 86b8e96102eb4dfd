package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

type env struct {
	store *of.KeyStore
	hub   *Hub
	reg   *prometheus.Registry // the hub's metrics
	url   string               // ws://host
}

func newEnv(t *testing.T, cfg Config) *env { return newEnvWith(t, cfg, of.SearcherMethods{}) }

// newEnvWith serves sockets whose eth_sendBundle and eth_cancelBundle go
// to methods.
func newEnvWith(t *testing.T, cfg Config, methods of.SearcherMethods) *env {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	store := of.NewKeyStore(pool)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	hub := NewHub(m)
	srv := NewServer(cfg, hub, of.NewKeys(store, 20*time.Millisecond), methods, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("server Run: %v", err)
		}
		ts.Close()
	})
	return &env{store: store, hub: hub, reg: reg, url: "ws" + strings.TrimPrefix(ts.URL, "http")}
}

func (e *env) key(t *testing.T, n int) (string, of.Identity) {
	t.Helper()
	key, id, err := e.store.Issue(t.Context(), fmt.Sprintf("0x%040x", n))
	if err != nil {
		t.Fatal(err)
	}
	return key, id
}

// TestUpgradeRejectsUnknownAndRevokedKeys: no socket opens without a live
// key; the answer, before any upgrade, is the HTTP status of the rule
// with a JSON-RPC error and an X-Request-ID, as docs/orderflow.md says.
// A GET with a live key but no upgrade is a bad request.
func TestUpgradeRejectsUnknownAndRevokedKeys(t *testing.T) {
	e := newEnv(t, Config{})
	revoked, id := e.key(t, 1)
	if err := e.store.Revoke(t.Context(), id.KeyHash); err != nil {
		t.Fatal(err)
	}
	live, _ := e.key(t, 2)
	unknown, _ := of.NewKey()
	for _, tc := range []struct {
		name, path   string
		upgrade      bool
		status, code int
		naming       string
	}{
		{"unknown key", "/v1/" + unknown, true, http.StatusUnauthorized, jsonrpc.CodeRule, "unknown or revoked API key"},
		{"revoked key", "/v1/" + revoked, true, http.StatusUnauthorized, jsonrpc.CodeRule, "unknown or revoked API key"},
		{"malformed key", "/v1/not-a-key", true, http.StatusUnauthorized, jsonrpc.CodeRule, "unknown or revoked API key"},
		{"no key", "/v1", true, http.StatusNotFound, jsonrpc.CodeInvalidRequest, "connect to /v1/<API_KEY>"},
		{"live key, no upgrade", "/v1/" + live, false, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "send Connection: Upgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.get(t, tc.path, tc.upgrade)
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get(jsonrpc.HeaderRequestID) == "" {
				t.Fatalf("Content-Type %q, X-Request-ID %q", ct, resp.Header.Get(jsonrpc.HeaderRequestID))
			}
			body, _ := io.ReadAll(resp.Body)
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *jsonrpc.Error  `json:"error"`
			}
			if err := json.Unmarshal(body, &r); err != nil || r.JSONRPC != "2.0" || string(r.ID) != "null" || r.Error == nil ||
				r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.naming) {
				t.Fatalf("body %s: want the JSON-RPC error %d naming %q", body, tc.code, tc.naming)
			}
			if e.hub.Len() != 0 {
				t.Fatalf("%d sockets in the hub", e.hub.Len())
			}
		})
	}
}

// get sends GET path, as a WebSocket handshake when upgrade is set, and
// returns the answer, whose body is closed when the test ends.
func (e *env) get(t *testing.T, path string, upgrade bool) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http"+strings.TrimPrefix(e.url, "ws")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if upgrade {
		for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
			"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRevokedKeyClosesOpenSocket: a socket whose key is revoked elsewhere
// is closed with 1008 "API key revoked"; another key's socket stays.
func TestRevokedKeyClosesOpenSocket(t *testing.T) {
	e := newEnv(t, Config{RevokeCheck: 20 * time.Millisecond})
	key, id := e.key(t, 1)
	other, _ := e.key(t, 2)
	conn, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	keep, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+other, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	if err := e.store.Revoke(t.Context(), id.KeyHash); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, _, err = conn.ReadMessage()
	var ce *websocket.CloseError
	if !errorsAs(err, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != "API key revoked" {
		t.Fatalf("after revoke: %v", err)
	}
	e.hub.Broadcast([]byte(`[{"hash":"0x01"}]`))
	_ = keep.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, msg, err := keep.ReadMessage(); err != nil || !bytes.Contains(msg, []byte(`"0x01"`)) {
		t.Fatalf("the other socket: %v %s", err, msg)
	}
}

// TestSlowReaderIsDisconnected: a socket that stops reading fills its
// TCP buffers, then its bounded queue; it is then closed, and only it: a
// reader that keeps up gets every notification, in order, and the hub
// never waits for the slow one.
func TestSlowReaderIsDisconnected(t *testing.T) {
	e := newEnv(t, Config{QueueLen: 4, WriteTimeout: time.Minute})
	key, _ := e.key(t, 1)
	slow, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close() // never read
	fast, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	waitSockets(t, e.hub, 2)

	pad := strings.Repeat("ab", 64<<10) // 128 KiB a notification: buffers fill fast
	const total = 400
	for i := range total {
		e.hub.Broadcast([]byte(fmt.Sprintf(`[{"n":%d,"pad":%q}]`, i, pad)))
		// Pace on the fast reader, so its queue never holds more than one.
		_ = fast.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, msg, err := fast.ReadMessage()
		if err != nil {
			t.Fatalf("fast reader after %d: %v", i, err)
		}
		var note struct {
			Params struct {
				Subscription string
				Result       []struct{ N int }
			}
		}
		if err := json.Unmarshal(msg, &note); err != nil || note.Params.Result[0].N != i || note.Params.Subscription != e.hub.SubscriptionID() {
			t.Fatalf("notification %d: %v %.80s", i, err, msg)
		}
	}
	_, dropped := e.hub.Stats()
	if dropped == 0 {
		t.Fatalf("%d notifications of %d KiB never overflowed the slow reader's queue", total, len(pad)/1024)
	}
	waitSockets(t, e.hub, 1)
	if n := metricstest.Value(t, e.reg, "orderflow_stream_disconnects_total", "reason", "overflow"); n != 1 {
		t.Fatalf("%v overflow disconnects, want 1", n)
	}
	if n := metricstest.Value(t, e.reg, "orderflow_stream_drops_total", "reason", "overflow"); n != float64(dropped) {
		t.Fatalf("%v overflow drops, the hub counted %d", n, dropped)
	}
	if n := metricstest.Value(t, e.reg, "orderflow_stream_sockets"); n != 1 {
		t.Fatalf("orderflow_stream_sockets = %v after the slow reader left, want 1", n)
	}
}

// TestBurstArrivesWhole: a burst of notifications of every frame-length
// class (7-, 16- and 64-bit lengths), queued faster than the writer
// sends them and so written several to a system call, reaches a standard
// client as the same messages in the same order.
func TestBurstArrivesWhole(t *testing.T) {
	e := newEnv(t, Config{})
	key, _ := e.key(t, 1)
	conn, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitSockets(t, e.hub, 1)
	sizes := []int{0, 30, 125 - 100, 200, 70_000, 10, 65_535 - 100, 65_536}
	var want [][]byte
	for i := range 600 {
		pad := strings.Repeat("x", sizes[i%len(sizes)])
		result := []byte(fmt.Sprintf(`[{"n":%d,"pad":%q}]`, i, pad))
		want = append(want, Notification(e.hub.SubscriptionID(), result))
		e.hub.Broadcast(result)
	}
	for i, w := range want {
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		typ, msg, err := conn.ReadMessage()
		if err != nil || typ != websocket.TextMessage || !bytes.Equal(msg, w) {
			t.Fatalf("message %d: %v type %d, %d bytes, want %d", i, err, typ, len(msg), len(w))
		}
	}
	if _, dropped := e.hub.Stats(); dropped != 0 {
		t.Fatalf("%d dropped", dropped)
	}
}

func waitSockets(t *testing.T, h *Hub, n int) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("%d sockets in the hub", n), func() bool { return h.Len() == n })
}

func errorsAs(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}

// FuzzResult: whatever a record carries, the result is a JSON array or
// an error.
func FuzzResult(f *testing.F) {
	f.Add(topics.TypeOrderflowTx, []byte(`{"data":{"hash":"0x01","tx":{"hash":"0x01"}}}`))
	f.Add(topics.TypeOrderflowOriginatorBundle, []byte(`{"data":{"bundleHash":"0x02","txs":[{"tx":{"a":1}},{"tx":{"b":2}}]}}`))
	f.Add(topics.TypeOrderflowOriginatorBundle, []byte(`{"data":{"bundleHash":"0x02","txs":[{"tx":null}]}}`))
	f.Fuzz(func(t *testing.T, typ string, value []byte) {
		out, key, err := Result(typ, value)
		if err != nil {
			return
		}
		var arr []json.RawMessage
		if key == "" || json.Unmarshal(out, &arr) != nil || len(arr) == 0 {
			t.Fatalf("result %q key %q", out, key)
		}
	})
}

// TestRecheckSparesSocketsItDidNotCheck: a socket that opened while a key
// re-check was running is not closed by it, even though the check's
// answer does not name its key.
func TestRecheckSparesSocketsItDidNotCheck(t *testing.T) {
	h := NewHub(nil)
	old := &socket{who: of.Identity{KeyHash: "aa"}, done: make(chan struct{}), hardClose: func() {}}
	fresh := &socket{who: of.Identity{KeyHash: "bb"}, done: make(chan struct{}), hardClose: func() {}}
	h.add(old)
	checked := h.keyHashes()
	h.add(fresh) // opened during the check
	if n := h.closeRevoked(checked, map[string]bool{}); n != 1 {
		t.Fatalf("closed %d sockets, want 1", n)
	}
	select {
	case <-fresh.done:
		t.Fatal("the socket opened during the check was closed")
	default:
	}
	select {
	case <-old.done:
	default:
		t.Fatal("the revoked socket stayed open")
	}
}
