package httpx

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// TestSlowBodiesDoNotTakeInFlightPlaces: many more clients than
// MaxInFlight send their headers and then trickle their bodies. They are
// not counted as in flight while the body comes, so a prompt client is
// served; each slow one is answered 408 once BodyTimeout has passed.
func TestSlowBodiesDoNotTakeInFlightPlaces(t *testing.T) {
	const limit, slow = 3, 12
	e := newTestEngine(t, io.Discard, func(c *Config) {
		c.MaxInFlight = limit
		c.BodyTimeout = 300 * time.Millisecond
	})
	e.POST("/echo", func(c *gin.Context) {
		body, err := ReadBody(c)
		if err != nil {
			Fail(c, err)
			return
		}
		OK(c, map[string]int{"bytes": len(body)})
	})
	srv := httptest.NewServer(e)
	defer srv.Close()

	conns := make([]net.Conn, slow)
	for i := range conns {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":"); err != nil {
			t.Fatal(err)
		}
		conns[i] = conn
	}
	time.Sleep(100 * time.Millisecond) // every slow request is in its handler chain

	resp, err := http.Post(srv.URL+"/echo", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"bytes":7`) {
		t.Fatalf("a prompt request beside %d slow bodies (limit %d): %d %s", slow, limit, resp.StatusCode, raw)
	}

	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 408") {
			t.Fatalf("slow body %d: %q %v, want 408 once the body timeout passed", i, line, err)
		}
	}
}
