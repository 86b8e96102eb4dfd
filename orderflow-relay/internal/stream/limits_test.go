package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
)

// open dials a socket with key, which must be accepted.
func (e *env) open(t *testing.T, key string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// refused dials a socket with key, which must be refused before the
// upgrade with 429, Retry-After and the JSON-RPC error -32000; it
// returns the error's message.
func (e *env) refused(t *testing.T, key string) string {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err == nil {
		conn.Close()
		t.Fatal("the socket opened over the limit")
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("dial: %v, response %v, want 429 with Retry-After 1", err, resp)
	}
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.JSONRPC != "2.0" || string(r.ID) != "null" || r.Error == nil || r.Error.Code != jsonrpc.CodeRule {
		t.Fatalf("refusal body %s: want a JSON-RPC error -32000", body)
	}
	return r.Error.Message
}

// TestSocketsPerKeyLimit: a key with SocketsPerKey open sockets gets no
// more; another key still does.
func TestSocketsPerKeyLimit(t *testing.T) {
	e := newEnv(t, Config{SocketsPerKey: 2, MaxSockets: 10})
	key, _ := e.key(t, 1)
	other, _ := e.key(t, 2)
	e.open(t, key)
	e.open(t, key)
	if msg := e.refused(t, key); !strings.Contains(msg, "per API key") || !strings.Contains(msg, "2 open sockets") {
		t.Fatalf("refusal %q does not name the per-key limit", msg)
	}
	e.open(t, other)
	waitSockets(t, e.hub, 3)
}

// TestMaxSocketsLimit: with MaxSockets open, no key gets another, not
// even one with none open.
func TestMaxSocketsLimit(t *testing.T) {
	e := newEnv(t, Config{SocketsPerKey: 5, MaxSockets: 3})
	for n := range 3 {
		key, _ := e.key(t, n+1)
		e.open(t, key)
	}
	fresh, _ := e.key(t, 9)
	if msg := e.refused(t, fresh); !strings.Contains(msg, "of this relay") || !strings.Contains(msg, "3 open sockets") {
		t.Fatalf("refusal %q does not name the relay's limit", msg)
	}
	waitSockets(t, e.hub, 3)
}

// TestClosedSocketFreesItsPlace: once a socket closes, the place it held
// under either limit takes a new socket; a refused socket held none.
func TestClosedSocketFreesItsPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		next int // account of the socket that waits for the place
	}{
		{"per key", Config{SocketsPerKey: 1}, 1},
		{"in all", Config{MaxSockets: 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg)
			first, _ := e.key(t, 1)
			next := first
			if tc.next != 1 {
				next, _ = e.key(t, tc.next)
			}
			conn := e.open(t, first)
			e.refused(t, next)
			e.refused(t, next)
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			conn.Close()
			var again *websocket.Conn
			poll.Until(t, "the freed place", func() bool {
				c, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+next, nil)
				again = c
				return err == nil
			})
			defer again.Close()
			waitSockets(t, e.hub, 1)
			e.refused(t, next)
			e.hub.Broadcast([]byte(`[{"hash":"0x01"}]`))
			readNotification(t, again, e.hub.SubscriptionID(), "0x01")
		})
	}
}

// TestFanOutAfterClosures: sockets closing anywhere in the hub leave
// every other one reached by the next notification, and only them.
func TestFanOutAfterClosures(t *testing.T) {
	e := newEnv(t, Config{})
	conns := make([]*websocket.Conn, 7)
	for i := range conns {
		key, _ := e.key(t, i+1)
		conns[i] = e.open(t, key)
	}
	waitSockets(t, e.hub, len(conns))
	for _, i := range []int{0, 3, 6} { // first, middle, last
		conns[i].Close()
	}
	waitSockets(t, e.hub, 4)
	e.hub.Broadcast([]byte(`[{"hash":"0x01"}]`))
	for _, i := range []int{1, 2, 4, 5} {
		readNotification(t, conns[i], e.hub.SubscriptionID(), "0x01")
	}
	if delivered, _ := e.hub.Stats(); delivered != 4 {
		t.Fatalf("%d delivered, want 4", delivered)
	}
}

// TestHubAddRemove: removing sockets in any order leaves exactly the
// others, each at the index it knows; removing one twice changes
// nothing.
func TestHubAddRemove(t *testing.T) {
	h := NewHub(nil)
	socks := make([]*socket, 6)
	for i := range socks {
		socks[i] = &socket{who: of.Identity{KeyHash: fmt.Sprint(i)}}
		h.add(socks[i])
	}
	open := slices.Clone(socks)
	for _, i := range []int{2, 0, 5, 2, 3} {
		h.remove(socks[i])
		open = slices.DeleteFunc(open, func(s *socket) bool { return s == socks[i] })
		got := h.list(nil)
		if len(got) != len(open) || h.Len() != len(open) {
			t.Fatalf("after removing %d: %d sockets, want %d", i, len(got), len(open))
		}
		for j, s := range got {
			if s.slot != j || !slices.Contains(open, s) {
				t.Fatalf("after removing %d: socket %s at %d knows slot %d", i, s.who.KeyHash, j, s.slot)
			}
		}
	}
}
