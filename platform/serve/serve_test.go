package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDeadlinesSpareWebSocketUpgrades: a request whose body trickles in
// fails to be read once the body deadline passes, while a WebSocket
// upgrade's hijacked connection keeps no deadline and is read long after.
func TestDeadlinesSpareWebSocketUpgrades(t *testing.T) {
	const body = 200 * time.Millisecond
	readErr := make(chan error, 2)
	srv := httptest.NewServer(WithDeadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_, err := io.ReadAll(r.Body)
			readErr <- err
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			readErr <- err
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		_, err = rw.ReadString('\n') // sent well after the body deadline
		readErr <- err
	}), body, body))
	defer srv.Close()
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	slow := dial()
	_, _ = io.WriteString(slow, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12")
	select {
	case err := <-readErr:
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("reading a body that stopped coming: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler still waits for the body 5s later; the body deadline was 200ms")
	}

	ws := dial()
	_, _ = io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	if line, err := bufio.NewReader(ws).ReadString('\n'); err != nil || !strings.Contains(line, "101") {
		t.Fatalf("upgrade answer: %q %v", line, err)
	}
	time.Sleep(3 * body)
	_, _ = io.WriteString(ws, "frame\n")
	select {
	case err := <-readErr:
		if err != nil {
			t.Fatalf("an upgraded connection read past the body deadline: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upgraded connection's read never returned")
	}
}
