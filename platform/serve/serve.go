// Package serve runs HTTP servers and process lifecycles the same way in
// every binary: structured logs, signal handling and graceful shutdown.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// NewLogger returns the JSON logger every binary writes to stderr.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Listen binds addr now, so that a port conflict fails start-up instead
// of surfacing later, and so that callers learn the real port of ":0".
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// Deadlines of every request but a WebSocket upgrade, counted from when
// its headers are in. They are set per request rather than as the
// server's ReadTimeout and WriteTimeout so that the upgrade paths keep no
// deadline: their sockets live for hours and keep their own ping/pong
// deadlines. The httpx frame tightens the body's: it reads bodies whole
// within its BodyTimeout (10s) before serving them.
const (
	HeaderTimeout = 10 * time.Second // request line and headers
	BodyTimeout   = 30 * time.Second // the body, for handlers outside the httpx frame
	WriteTimeout  = 60 * time.Second // the whole answer, handler's work included
)

// HTTP serves h on ln until ctx ends, then stops accepting and waits up to
// grace for in-flight requests to finish.
func HTTP(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{
		Handler:           WithDeadlines(h, BodyTimeout, WriteTimeout),
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown %s: %w", ln.Addr(), err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// WithDeadlines sets the read deadline body and the write deadline write
// (HTTP uses BodyTimeout and WriteTimeout) on every request's connection except a WebSocket upgrade
// (GET with Upgrade: websocket), so a client that sends its body or reads
// its answer slowly cannot hold a connection and a goroutine for long.
func WithDeadlines(h http.Handler, body, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isWebSocketUpgrade(r) {
			rc := http.NewResponseController(w)
			now := time.Now()
			// Errors mean the writer cannot set deadlines (test recorders).
			_ = rc.SetReadDeadline(now.Add(body))
			_ = rc.SetWriteDeadline(now.Add(write))
		}
		h.ServeHTTP(w, r)
	})
}

func isWebSocketUpgrade(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// HealthcheckMain implements the `-healthcheck` flag of every binary: it
// asks the process's own admin endpoint for readiness and returns the exit
// code, so distroless containers need no curl.
func HealthcheckMain(adminAddr string) int {
	host, port, err := net.SplitHostPort(adminAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		return 1
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort(host, port) + "/readyz")
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "healthcheck: readyz answered", resp.Status)
		return 1
	}
	return 0
}
