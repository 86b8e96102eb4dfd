package stream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

// Config tunes the searcher WebSocket server.
type Config struct {
	QueueLen     int           // messages a socket may have queued behind a slow write before it is dropped (1024)
	PingInterval time.Duration // keepalive ping period (20s); a socket silent for 2.5 periods is closed
	WriteTimeout time.Duration // longest one write may take (5s)
	MaxMessage   int64         // largest client message (4 MiB)
	RevokeCheck  time.Duration // how often open sockets' keys are re-checked (250ms)
	// SocketsPerKey (SEARCHER_SOCKETS_PER_KEY, 8) and MaxSockets
	// (SEARCHER_SOCKETS_MAX, 4096) bound the open sockets of one API key
	// and of the relay; a socket over either is refused with 429.
	SocketsPerKey int
	MaxSockets    int
}

// Defaults of Config's socket limits.
const (
	DefaultSocketsPerKey = 8
	DefaultMaxSockets    = 4096
)

func (c Config) withDefaults() Config {
	if c.QueueLen <= 0 {
		c.QueueLen = 1024
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 20 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = 4 << 20
	}
	if c.RevokeCheck <= 0 {
		c.RevokeCheck = 250 * time.Millisecond
	}
	if c.SocketsPerKey <= 0 {
		c.SocketsPerKey = DefaultSocketsPerKey
	}
	if c.MaxSockets <= 0 {
		c.MaxSockets = DefaultMaxSockets
	}
	return c
}

// Server is the searcher WebSocket endpoint {searcher_ws_url}/v1/<API_KEY>.
type Server struct {
	cfg      Config
	hub      *Hub
	slots    *slots
	keys     *of.Keys
	methods  of.SearcherMethods
	log      *slog.Logger
	upgrader websocket.Upgrader
	handler  http.Handler // serve behind an X-Request-ID
}

// NewServer returns the endpoint over hub.
func NewServer(cfg Config, hub *Hub, keys *of.Keys, methods of.SearcherMethods, log *slog.Logger) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, hub: hub, slots: newSlots(cfg.SocketsPerKey, cfg.MaxSockets), keys: keys, methods: methods, log: log,
		upgrader: websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384,
			CheckOrigin: func(*http.Request) bool { return true }}} // API-key auth, not cookies: any origin
	s.handler = jsonrpc.WithRequestID(http.HandlerFunc(s.serve))
	return s
}

// ServeHTTP authenticates the key in the path, takes a place within the
// socket limits and upgrades. Every answer carries an X-Request-ID; a
// refusal is a JSON-RPC error, as the searcher's HTTP endpoint answers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/v1/")
	if !ok || key == "" || strings.Contains(key, "/") {
		fail(w, http.StatusNotFound, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "unknown path; connect to /v1/<API_KEY>"))
		return
	}
	who, err := s.keys.Lookup(r.Context(), key)
	if err != nil {
		if !errors.Is(err, of.ErrUnknownKey) {
			s.log.Error("searcher key lookup", "request_id", jsonrpc.RequestID(w), "error", err)
			w.Header().Set("Retry-After", refuseRetryAfter)
			fail(w, http.StatusServiceUnavailable, jsonrpc.Errorf(jsonrpc.CodeRule, "API keys cannot be checked now; retry later"))
			return
		}
		fail(w, http.StatusUnauthorized, jsonrpc.Errorf(jsonrpc.CodeRule, "unknown or revoked API key"))
		return
	}
	if !who.Has(of.RoleSearcher) {
		fail(w, http.StatusForbidden, jsonrpc.Errorf(jsonrpc.CodeRule, "this API key has no searcher role"))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		fail(w, http.StatusBadRequest, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest,
			"GET opens a WebSocket: send Connection: Upgrade and Upgrade: websocket; send bundles with HTTP POST"))
		return
	}
	if refusal := s.slots.take(who.KeyHash); refusal != "" {
		refuse(w, refusal)
		return
	}
	// Deferred, as is the removal below: a panic in the read loop, which
	// the HTTP server recovers, must neither leave the socket in the hub
	// nor keep its place. Deferred first, so run last: a place is free
	// only once its socket has left the hub.
	defer s.slots.give(who.KeyHash)
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	sock := newSocket(s, conn, who)
	s.hub.add(sock)
	defer s.hub.remove(sock)
	go sock.writeLoop()
	sock.readLoop()
}

// Run re-checks the keys of open sockets until ctx ends, closing those
// whose key was revoked or rotated.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.RevokeCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.closeAll()
			return nil
		case <-t.C:
		}
		hashes := s.hub.keyHashes()
		if len(hashes) == 0 {
			continue
		}
		live, err := s.keys.Store().Live(ctx, hashes)
		if err != nil {
			s.log.Warn("re-check searcher keys", "error", err)
			continue
		}
		if n := s.hub.closeRevoked(hashes, live); n > 0 {
			s.log.Info("closed sockets of revoked keys", "sockets", n)
		}
	}
}

func (s *Server) closeAll() {
	for _, sock := range s.hub.list(nil) {
		sock.closeWith(websocket.CloseGoingAway, "server shutting down", disconnectShutdown)
	}
}

// socket is one searcher connection. readLoop owns reads; every write
// goes through out (see output), from Broadcast, from readLoop (replies,
// pongs) and from writeLoop, which sends pings, writes what queued while
// the peer was slow, and the close frame; others end it through done.
type socket struct {
	srv  *Server
	conn *websocket.Conn
	who  of.Identity
	out  output
	slot int // index in the hub's sockets, guarded by the hub's mu
	// metrics counts why the socket closed (the hub's; nil: nowhere).
	metrics *Metrics
	// hardClose closes the network connection under the writer.
	hardClose func()
	done      chan struct{}
	once      sync.Once
	closing   struct {
		sync.Mutex
		code   int
		reason string
	}
}

func newSocket(srv *Server, conn *websocket.Conn, who of.Identity) *socket {
	s := &socket{srv: srv, conn: conn, who: who, metrics: srv.hub.metrics, done: make(chan struct{}),
		hardClose: func() { _ = conn.NetConn().Close() }}
	s.out.init(conn.NetConn())
	return s
}

func (s *socket) overflow() {
	s.closeWith(websocket.ClosePolicyViolation, "too slow: notification queue overflowed", disconnectOverflow)
}

func (s *socket) revoked() {
	s.closeWith(websocket.ClosePolicyViolation, "API key revoked", disconnectRevoked)
}

// closeGrace is how long the writer has to send the close frame before
// the connection is closed under it.
const closeGrace = time.Second

// closeWith asks the writer to send a close frame and end the connection.
// A writer blocked on a peer that stopped reading (the usual reason for an
// overflow) cannot send it, so the network connection is closed after
// closeGrace regardless; that unblocks the writer and the reader, and the
// socket leaves the hub. It never waits, and is called with out.mu held.
// The first call decides the close, and counts it under why (one of the
// disconnect reasons).
func (s *socket) closeWith(code int, reason, why string) {
	s.once.Do(func() {
		s.metrics.disconnected(why)
		s.closing.Lock()
		s.closing.code, s.closing.reason = code, reason
		s.closing.Unlock()
		close(s.done)
		time.AfterFunc(closeGrace, s.hardClose)
	})
}

func (s *socket) writeLoop() {
	ping := time.NewTicker(s.srv.cfg.PingInterval)
	defer ping.Stop()
	defer s.conn.Close()
	for {
		select {
		case <-s.out.kick:
			if err := s.drain(); err != nil {
				// A write failed or timed out, maybe mid-frame: nothing
				// more can be sent on this connection.
				s.closeWith(websocket.CloseAbnormalClosure, "", writeFailure(err))
				s.hardClose()
			}
		case <-ping.C:
			s.write(pingFrame, 1)
		case <-s.done:
			s.finish()
			return
		}
	}
}

func (s *socket) readLoop() {
	why := disconnectClosed
	defer func() { s.closeWith(websocket.CloseNormalClosure, "", why) }()
	s.conn.SetReadLimit(s.srv.cfg.MaxMessage)
	deadline := func() { _ = s.conn.SetReadDeadline(time.Now().Add(s.srv.cfg.PingInterval * 5 / 2)) }
	deadline()
	s.conn.SetPongHandler(func(string) error { deadline(); return nil })
	// Pongs and the answer to a close go through out like every frame;
	// the deferred closeWith answers a client's close with 1000.
	s.conn.SetPingHandler(func(data string) error {
		s.write(appendFrame(nil, opPong, []byte(data)), 1)
		return nil
	})
	s.conn.SetCloseHandler(func(int, string) error { return nil })
	for {
		_, msg, err := s.conn.ReadMessage()
		if err != nil {
			why = readFailure(err)
			return
		}
		deadline()
		switch s.write(TextFrame(s.answer(msg)), 1) {
		case overflowed, closed:
			return
		}
	}
}

// readFailure is the disconnect reason of the error that ended reading.
func readFailure(err error) string {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET):
		return disconnectClosed
	case errors.Is(err, websocket.ErrReadLimit):
		return disconnectProtocol
	case errors.As(err, &ne) && ne.Timeout():
		return disconnectPing
	}
	return disconnectProtocol // gorilla/websocket's errors of a malformed frame
}

// writeFailure is the disconnect reason of a write of the writer goroutine
// that failed: past its deadline (the peer does not read), or on a broken
// connection.
func writeFailure(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return disconnectSlow
	}
	return disconnectClosed
}

func (s *socket) answer(msg []byte) []byte {
	req, id, perr := jsonrpc.Parse(msg)
	if perr != nil {
		return jsonrpc.EncodeError(id, perr)
	}
	var result any
	var err error
	switch req.Method {
	case of.MethodSubscribe:
		result, err = s.subscribe(req)
	case of.MethodUnsubscribe:
		err = jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "eth_unsubscribe is not supported: the subscription lasts as long as the connection")
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		result, err = s.srv.methods.Call(ctx, s.who, req)
		cancel()
	}
	if err != nil {
		e := jsonrpc.AsError(err)
		if e.Code == jsonrpc.CodeInternal {
			s.srv.log.Error("searcher websocket call", "method", req.Method, "error", err)
		}
		return jsonrpc.EncodeError(req.ID, e)
	}
	out, err := jsonrpc.EncodeResult(req.ID, result)
	if err != nil {
		return jsonrpc.EncodeError(req.ID, jsonrpc.AsError(err))
	}
	return out
}

// subscribe returns the id of the subscription the connection has had
// since it opened; calling it again returns the same id.
func (s *socket) subscribe(req jsonrpc.Request) (any, error) {
	if string(req.Param) != `"svc_partialPendingBundles"` {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `invalid params: the only subscription is ["svc_partialPendingBundles"]`)
	}
	return s.srv.hub.SubscriptionID(), nil
}
