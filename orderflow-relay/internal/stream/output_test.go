package stream

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/poll"
)

// TestPausedReaderCatchesUp: a reader that stops reading until the
// kernel's buffers are full hands its socket to the writer goroutine; a
// reply and later notifications queue behind what was cut mid-frame; once
// the reader reads again it gets every message whole and in order, and
// writes go straight to the kernel again.
func TestPausedReaderCatchesUp(t *testing.T) {
	e := newEnv(t, Config{QueueLen: 1000, WriteTimeout: time.Minute})
	conn := e.dial(t, 1)
	waitSockets(t, e.hub, 1)
	sock := e.hub.list(nil)[0]

	pad := strings.Repeat("ab", 64<<10) // 128 KiB a notification
	note := func(i int) []byte { return []byte(fmt.Sprintf(`[{"n":%d,"pad":%q}]`, i, pad)) }
	isSlow := func() bool {
		sock.out.mu.Lock()
		defer sock.out.mu.Unlock()
		return sock.out.slow
	}
	// Unread notifications until the kernel's buffers are full, and a few
	// more to queue behind the frame they cut.
	before := 0
	for ; !isSlow(); before++ {
		if before == 2000 {
			t.Fatalf("%d MiB unread and the socket is not handed to its writer", before*len(pad)>>20)
		}
		e.hub.Broadcast(note(before))
	}
	for range 5 {
		e.hub.Broadcast(note(before))
		before++
	}
	const after = 20
	// The reply is written after the notifications broadcast before the
	// request, in some order with those broadcast after it.
	if err := conn.WriteMessage(websocket.TextMessage, []byte(subscribeMsg(`"mid"`))); err != nil {
		t.Fatal(err)
	}
	for i := before; i < before+after; i++ {
		e.hub.Broadcast(note(i))
	}

	next, replies := 0, 0
	for next < before+after {
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("after %d notifications: %v", next, err)
		}
		if bytes.Contains(msg, []byte(`"id":"mid"`)) && next >= before {
			replies++
			continue
		}
		if !bytes.Equal(msg, Notification(e.hub.SubscriptionID(), note(next))) {
			t.Fatalf("message after %d notifications: %d bytes %.60s", next, len(msg), msg)
		}
		next++
	}
	if replies == 0 {
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, msg, err := conn.ReadMessage(); err != nil || !bytes.Contains(msg, []byte(`"id":"mid"`)) {
			t.Fatalf("after every notification: %v %.80s, want the reply", err, msg)
		}
	} else if replies != 1 {
		t.Fatalf("%d replies", replies)
	}

	poll.Until(t, "the writer to give the socket back", func() bool {
		sock.out.mu.Lock()
		defer sock.out.mu.Unlock()
		return !sock.out.slow
	})
	e.hub.Broadcast([]byte(`[{"hash":"0x05"}]`))
	sock.out.mu.Lock()
	slow, queued := sock.out.slow, len(sock.out.pending)
	sock.out.mu.Unlock()
	if slow || queued != 0 {
		t.Fatalf("a notification to a reader that caught up was queued, not written")
	}
	readNotification(t, conn, e.hub.SubscriptionID(), "0x05")
	if _, dropped := e.hub.Stats(); dropped != 0 {
		t.Fatalf("%d dropped", dropped)
	}
}

// TestBroadcastReachesEverySocket: one Broadcast of several results
// reaches each of many sockets (more than one sweep part's worth) as that
// many notifications, in order.
func TestBroadcastReachesEverySocket(t *testing.T) {
	const sockets = 3*sweepShare + 5
	e := newEnv(t, Config{SocketsPerKey: sockets})
	key, _ := e.key(t, 1)
	conns := make([]*websocket.Conn, sockets)
	for i := range conns {
		c, _, err := websocket.DefaultDialer.Dial(e.url+"/v1/"+key, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	waitSockets(t, e.hub, sockets)
	e.hub.Broadcast([]byte(`[{"hash":"0x01"}]`), []byte(`[{"hash":"0x02"}]`), []byte(`[{"hash":"0x03"}]`))
	for _, c := range conns {
		for _, h := range []string{"0x01", "0x02", "0x03"} {
			readNotification(t, c, e.hub.SubscriptionID(), h)
		}
	}
	if delivered, _ := e.hub.Stats(); delivered != 3*sockets {
		t.Fatalf("%d delivered, want %d", delivered, 3*sockets)
	}
}

// TestClientPingAndClose: the server answers a client's ping with a pong
// of the same data, and a client's close with 1000, after which the
// socket leaves the hub.
func TestClientPingAndClose(t *testing.T) {
	e := newEnv(t, Config{})
	conn := e.dial(t, 1)
	waitSockets(t, e.hub, 1)
	pong := make(chan string, 1)
	conn.SetPongHandler(func(data string) error { pong <- data; return nil })
	if err := conn.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	// The server handles the ping before the request, and the client
	// reads the pong before the reply.
	subscribed(t, conn)
	select {
	case data := <-pong:
		if data != "are you there" {
			t.Fatalf("pong %q", data)
		}
	default:
		t.Fatal("no pong before the reply to a request sent after the ping")
	}

	if err := conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, _, err := conn.ReadMessage()
	var ce *websocket.CloseError
	if !errorsAs(err, &ce) || ce.Code != websocket.CloseNormalClosure {
		t.Fatalf("after the client's close: %v", err)
	}
	waitSockets(t, e.hub, 0)
}
