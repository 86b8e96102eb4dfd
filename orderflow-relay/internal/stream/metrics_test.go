package stream

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/platform/poll"
)

// TestMetricsCountSocketsDeliveriesAndDisconnects opens sockets, sends
// them notifications and ends them in the ways the relay tells apart,
// and reads each effect back from the registry.
func TestMetricsCountSocketsDeliveriesAndDisconnects(t *testing.T) {
	e := newEnv(t, Config{MaxMessage: 1024, RevokeCheck: 20 * time.Millisecond})
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, e.reg, name, labels...) }
	disconnects := func(reason string) float64 { return value("orderflow_stream_disconnects_total", "reason", reason) }
	key, _ := e.key(t, 1)
	otherKey, other := e.key(t, 2)
	dial := func(key string) *websocket.Conn {
		t.Helper()
		c, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	closer, talker, revoked := dial(key), dial(key), dial(otherKey)
	waitSockets(t, e.hub, 3)
	if n := value("orderflow_stream_sockets"); n != 3 {
		t.Fatalf("orderflow_stream_sockets = %v, want 3", n)
	}
	e.hub.Broadcast([]byte(`[{"n":1}]`), []byte(`[{"n":2}]`))
	for _, c := range []*websocket.Conn{closer, talker, revoked} {
		for range 2 {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, _, err := c.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := value("orderflow_stream_deliveries_total"); n != 6 {
		t.Fatalf("%v deliveries, want 2 notifications × 3 sockets", n)
	}

	// The client closes.
	if err := closer.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")); err != nil {
		t.Fatal(err)
	}
	waitSockets(t, e.hub, 2)
	if n := disconnects("closed"); n != 1 {
		t.Fatalf("%v closed disconnects, want 1", n)
	}
	// A message over MaxMessage breaks the protocol.
	if err := talker.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 2048))); err != nil {
		t.Fatal(err)
	}
	waitSockets(t, e.hub, 1)
	if n := disconnects("protocol"); n != 1 {
		t.Fatalf("%v protocol disconnects, want 1", n)
	}
	// A revoked key's socket is closed by the re-check.
	if err := e.store.Revoke(t.Context(), other.KeyHash); err != nil {
		t.Fatal(err)
	}
	waitSockets(t, e.hub, 0)
	if n := disconnects("revoked"); n != 1 {
		t.Fatalf("%v revoked disconnects, want 1", n)
	}
	if n := value("orderflow_stream_sockets"); n != 0 {
		t.Fatalf("orderflow_stream_sockets = %v with every socket closed", n)
	}
	// A notification to no socket is neither delivered nor dropped; the
	// reasons that did not happen stay at 0.
	e.hub.Broadcast([]byte(`[{"n":3}]`))
	if n := value("orderflow_stream_deliveries_total"); n != 6 {
		t.Fatalf("%v deliveries after a broadcast to no socket, want 6", n)
	}
	for _, reason := range []string{"overflow", "slow", "ping_timeout", "shutdown"} {
		if n := disconnects(reason); n != 0 {
			t.Fatalf("%v %s disconnects", n, reason)
		}
	}
}

// TestSilentSocketTimesOut: a client that answers no ping is closed once
// 2.5 ping intervals pass without a frame, and counted as ping_timeout.
func TestSilentSocketTimesOut(t *testing.T) {
	e := newEnv(t, Config{PingInterval: 40 * time.Millisecond})
	key, _ := e.key(t, 1)
	c, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // never read, so never answers a ping
	poll.Until(t, "the silent socket timed out", func() bool {
		return metricstest.Value(t, e.reg, "orderflow_stream_disconnects_total", "reason", "ping_timeout") == 1
	})
	waitSockets(t, e.hub, 0)
}
