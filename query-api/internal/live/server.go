// Package live is the exchange's WebSocket at {base_url}/ws: public
// market channels (markets, order books, trades, tickers), private
// channels of a logged-in user (orders, balances, transactions,
// positions) and queries, fed from the log through query-api's market
// model and the account feed. Only the candles channel reads Postgres
// again and again: once a second per family and interval subscribed to
// (candles.go). docs/websocket.md is the protocol.
package live

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/serve"
	"blockspace.exchange/query-api/internal/markets"
)

// Config tunes the WebSocket server; zero values take the defaults.
type Config struct {
	QueueLen         int           // messages a socket may have unsent before it is disconnected (1024)
	PingInterval     time.Duration // keepalive ping period (20s); a socket silent for 2.5 periods is closed
	WriteTimeout     time.Duration // longest one write may take (5s)
	MaxMessage       int64         // largest client message in bytes (16 KiB)
	MaxSockets       int           // open sockets per process before upgrades answer 429 (10000)
	MaxSubscriptions int           // subscriptions per socket (200)
	RequestRate      float64       // client messages per second, sustained (20)
	RequestBurst     int           // client messages in a burst (50)
	AuthCheck        time.Duration // how often sessions are checked for expiry and revocation (1s)
	CandlePoll       time.Duration // how often subscribed candles are read again (1s)
	CandleGrace      time.Duration // how long after its end an interval's candle is closed (3s)
	Now              func() time.Time
}

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
		c.MaxMessage = 16 << 10
	}
	if c.MaxSockets <= 0 {
		c.MaxSockets = 10_000
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = 200
	}
	if c.RequestRate <= 0 {
		c.RequestRate = 20
	}
	if c.RequestBurst <= 0 {
		c.RequestBurst = 50
	}
	if c.AuthCheck <= 0 {
		c.AuthCheck = time.Second
	}
	if c.CandlePoll <= 0 {
		c.CandlePoll = time.Second
	}
	if c.CandleGrace <= 0 {
		c.CandleGrace = 3 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// TokenVerifier checks access tokens (auth.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*auth.Claims, error)
}

// SessionChecker tells which login sessions were revoked (logout, or a
// rotated refresh credential that came back); PostgresSessions is one.
type SessionChecker interface {
	Revoked(ctx context.Context, sessionIDs []int64) (map[int64]bool, error)
}

// Deps are what the server reads from.
type Deps struct {
	Model     *markets.Model
	Tokens    TokenVerifier
	Sessions  SessionChecker          // revoked sessions; nil checks only expiry and keys
	Positions PositionReader          // the positions query; nil answers code 21
	Candles   CandleReader            // the candles channel; nil answers code 21
	Clock     environment.Environment // genesis and slot length, for the currentSlot query
	Logger    *slog.Logger
	Metrics   *httpx.Metrics // counts refused upgrades; nil counts nothing
}

// Server is the WebSocket endpoint. It registers itself as the market
// model's listener.
type Server struct {
	cfg      Config
	deps     Deps
	hub      *Hub
	candles  *candleStreams
	upgrader websocket.Upgrader
}

// NewServer returns the endpoint over deps.Model and makes it the model's
// listener.
func NewServer(cfg Config, deps Deps) *Server {
	s := &Server{cfg: cfg.withDefaults(), deps: deps, hub: NewHub(),
		upgrader: websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384,
			// Sessions are carried in messages, never in cookies, so a
			// page of another origin gains nothing: any origin may connect.
			CheckOrigin: func(*http.Request) bool { return true }}}
	s.candles = newCandleStreams(deps.Candles, s.hub, s.cfg.CandleGrace, s.cfg.Now)
	deps.Model.SetListener(publisher{s.hub})
	return s
}

// Hub returns the server's sockets and subscriptions, for feeds that
// publish to them and for statistics.
func (s *Server) Hub() *Hub { return s.hub }

// ServeHTTP upgrades GET /ws. An Authorization: Bearer header logs the
// socket in at once; an invalid one is refused with 401 before the
// upgrade.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		s.fail(w, httpx.Invalid("GET /ws opens a WebSocket: send Connection: Upgrade and Upgrade: websocket"))
		return
	}
	if s.hub.Stats().Sockets >= s.cfg.MaxSockets {
		s.fail(w, httpx.TooMany(httpx.ReasonInFlight, "server is at its limit of "+strconv.Itoa(s.cfg.MaxSockets)+" WebSockets"))
		return
	}
	var claims *auth.Claims
	token, hasToken := auth.BearerToken(r.Header.Get("Authorization"))
	if r.Header.Get("Authorization") != "" {
		var err error
		if hasToken {
			claims, err = s.verify(r.Context(), token)
		}
		if !hasToken || err != nil {
			s.fail(w, httpx.Unauthorized("header Authorization must carry a valid, unexpired access token"))
			return
		}
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	sock := newSocket(s, conn)
	s.hub.add(sock)
	// Deferred: a panic in the read loop, which the HTTP server recovers,
	// must not leave the socket in the hub.
	defer s.hub.remove(sock)
	if claims != nil {
		s.startSession(sock, token, claims)
	}
	go sock.writeLoop()
	sock.readLoop()
}

// fail answers a refused upgrade with the REST error envelope; a 429 is
// counted as the REST frame counts its own.
func (s *Server) fail(w http.ResponseWriter, e *httpx.Error) {
	s.deps.Metrics.Refused(e)
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	if e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(encode(map[string]any{"success": false, "code": e.Code, "errorMsgKey": e.Key,
		"message": e.Message, "data": struct{}{}}))
}

// Run checks sessions every AuthCheck until ctx ends, then closes every
// socket with 1001 (going away). Beside it, until ctx ends, a goroutine
// reads subscribed candles every CandlePoll, so that a slow Postgres read
// of candles never holds up the session checks; Run returns after it.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		serve.Every(ctx, s.cfg.CandlePoll, s.candles.poll, func(err error) { s.deps.Logger.Warn("live: read candles", "error", err) })
	})
	t := time.NewTicker(s.cfg.AuthCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, sock := range s.hub.all() {
				sock.closeWith(websocket.CloseGoingAway, "server shutting down")
			}
			return nil
		case <-t.C:
			s.checkSessions(ctx)
		}
	}
}

// checkSessions ends the session of every socket whose access token
// expired, no longer verifies (its signing key was withdrawn), or belongs
// to a revoked login session. Revocations are read in one query for all
// sockets; when that read fails the tokens, still valid, keep their
// subscriptions until the next check.
func (s *Server) checkSessions(ctx context.Context) {
	now := s.cfg.Now()
	bySession := map[int64][]*socket{}
	for _, sock := range s.hub.loggedIn() {
		token, expires := sock.session()
		if token == "" {
			continue
		}
		if !now.Before(expires) {
			s.endSession(sock, "access token expired at "+expires.UTC().Format(time.RFC3339))
			continue
		}
		claims, err := s.deps.Tokens.Verify(ctx, token)
		if err != nil {
			s.endSession(sock, "access token is no longer valid")
			continue
		}
		if claims.SessionID > 0 {
			bySession[claims.SessionID] = append(bySession[claims.SessionID], sock)
		}
	}
	if s.deps.Sessions == nil || len(bySession) == 0 {
		return
	}
	ids := make([]int64, 0, len(bySession))
	for id := range bySession {
		ids = append(ids, id)
	}
	revoked, err := s.deps.Sessions.Revoked(ctx, ids)
	if err != nil {
		s.deps.Logger.Warn("read revoked sessions", "error", err)
		return
	}
	for id := range revoked {
		for _, sock := range bySession[id] {
			s.endSession(sock, "the login session was revoked")
		}
	}
}

// endSession logs a socket out and tells it which private subscriptions
// ended.
func (s *Server) endSession(sock *socket, why string) {
	sock.setSession("", time.Time{})
	ended := s.hub.logout(sock)
	names := make([]string, 0, len(ended))
	for _, k := range ended {
		names = append(names, k.channel)
	}
	msg := why + "; private subscriptions ended"
	if len(names) > 0 {
		msg += " (" + joinUnique(names) + ")"
	}
	sock.send(encode(reply{Event: "error", Code: httpx.CodeAuth, Msg: msg + "; log in again"}))
}

// verify checks a token and that it has not expired by its own exp; the
// verifier's leeway is for clock skew, not for extending sessions.
func (s *Server) verify(ctx context.Context, token string) (*auth.Claims, error) {
	claims, err := s.deps.Tokens.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if claims.ExpiresAt == nil || !s.cfg.Now().Before(claims.ExpiresAt.Time) {
		return nil, errExpired
	}
	return claims, nil
}

func (s *Server) startSession(sock *socket, token string, c *auth.Claims) {
	sock.setSession(token, c.ExpiresAt.Time)
	s.hub.login(sock, c.User.UserID)
}

func joinUnique(names []string) string {
	seen := map[string]bool{}
	out := ""
	for _, n := range names {
		if !seen[n] {
			if out != "" {
				out += ", "
			}
			out += n
			seen[n] = true
		}
	}
	return out
}

func formatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
