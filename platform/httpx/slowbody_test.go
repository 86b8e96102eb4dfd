package httpx

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/poll"
)

// slowHead is the request of a slow client up to the first 5 bytes of its
// body, whose declared length is 100 bytes.
const slowHead = "POST /echo HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":"

// bodyWatch serves next and tells, of the requests marked X-Slow, how many
// have had their body read from and how many were answered.
type bodyWatch struct {
	next              http.Handler
	reading, answered atomic.Int64
}

func (w *bodyWatch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Slow") == "" {
		w.next.ServeHTTP(rw, r)
		return
	}
	r.Body = &watchedBody{ReadCloser: r.Body, reading: &w.reading}
	defer w.answered.Add(1)
	w.next.ServeHTTP(rw, r)
}

// watchedBody counts the first read of a request body.
type watchedBody struct {
	io.ReadCloser
	reading *atomic.Int64
	started bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.reading.Add(1)
	}
	return b.ReadCloser.Read(p)
}

func newEchoEngine(t *testing.T, limit int, bodyTimeout time.Duration) *gin.Engine {
	t.Helper()
	e := newTestEngine(t, io.Discard, func(c *Config) {
		c.MaxInFlight = limit
		c.BodyTimeout = bodyTimeout
	})
	e.POST("/echo", func(c *gin.Context) {
		body, err := ReadBody(c)
		if err != nil {
			Fail(c, err)
			return
		}
		OK(c, map[string]int{"bytes": len(body)})
	})
	return e
}

// statusLine reads the status line of the answer on conn.
func statusLine(t *testing.T, conn net.Conn, r *bufio.Reader) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(poll.Timeout))
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read an answer: %q %v", line, err)
	}
	return line
}

// TestSlowBodiesDoNotTakeInFlightPlaces: many more clients than
// MaxInFlight send their headers and then trickle their bodies. They are
// not counted as in flight while the body comes, so their bodies are all
// read at once and a prompt client is served beside them; each slow one is
// served once its body is in, and answered 408 if it is not in by
// BodyTimeout.
func TestSlowBodiesDoNotTakeInFlightPlaces(t *testing.T) {
	t.Run("not in flight while the body comes", func(t *testing.T) {
		const limit, slow = 3, 12
		// The bodies may take as long as a test waits: none times out
		// while the test looks.
		watch := &bodyWatch{next: newEchoEngine(t, limit, 2*poll.Timeout)}
		srv := httptest.NewServer(watch)
		defer srv.Close()

		conns := make([]net.Conn, slow)
		for i := range conns {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, slowHead); err != nil {
				t.Fatal(err)
			}
			conns[i] = conn
		}
		// Counted in flight before their bodies were read, all but limit
		// of them would be answered 429 and never read.
		poll.Before(t, fmt.Sprintf("the %d slow bodies read at once", slow), time.Now().Add(poll.Timeout), func() bool {
			if n := watch.answered.Load(); n > 0 {
				t.Fatalf("%d slow requests answered before their bodies came", n)
			}
			return watch.reading.Load() == slow
		}, func() string { return fmt.Sprintf("%d read", watch.reading.Load()) })

		resp, err := http.Post(srv.URL+"/echo", "application/json", strings.NewReader(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"bytes":7`) {
			t.Fatalf("a prompt request beside %d slow bodies (limit %d): %d %s", slow, limit, resp.StatusCode, raw)
		}

		// One at a time, so that they stay within the limit once counted.
		rest := "1" + strings.Repeat(" ", 100-len(`{"a":`)-2) + "}"
		for i, conn := range conns {
			if _, err := io.WriteString(conn, rest); err != nil {
				t.Fatal(err)
			}
			if line := statusLine(t, conn, bufio.NewReader(conn)); !strings.HasPrefix(line, "HTTP/1.1 200") {
				t.Fatalf("slow body %d once in: %q, want 200", i, line)
			}
		}
	})
	t.Run("408 for a body not in by BodyTimeout", func(t *testing.T) {
		var handled atomic.Bool
		e := newEchoEngine(t, 3, 50*time.Millisecond)
		e.POST("/never", func(c *gin.Context) { handled.Store(true) })
		srv := httptest.NewServer(e)
		defer srv.Close()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// The body never comes, so the answer is the same however long
		// the test takes.
		if _, err := io.WriteString(conn, strings.Replace(slowHead, "/echo", "/never", 1)); err != nil {
			t.Fatal(err)
		}
		if line := statusLine(t, conn, bufio.NewReader(conn)); !strings.HasPrefix(line, "HTTP/1.1 408") {
			t.Fatalf("a body that never comes: %q, want 408 once the body timeout passed", line)
		}
		if handled.Load() {
			t.Fatal("the handler ran without the body")
		}
	})
}
