package live

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

// harness is a WebSocket server over a market model, with a verifier
// whose signing key the test holds.
type harness struct {
	t      testing.TB
	model  *markets.Model
	srv    *Server
	http   *httptest.Server
	url    string
	key    *ecdsa.PrivateKey
	kid    string
	keysMu sync.Mutex
	keys   auth.KeySet
	tokens *auth.Verifier
	// verified counts the tokens the server asked the verifier about: a
	// session check asks about each logged-in socket whose token has not
	// expired.
	verified atomic.Int64
	n        int // envelope ids
}

func newHarness(t testing.TB, cfg Config, positions PositionReader) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, Deps{Positions: positions})
}

// newHarnessWith serves the Positions and Sessions of deps; the harness
// provides the rest.
func newHarnessWith(t testing.TB, cfg Config, deps Deps) *harness {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, model: markets.NewModel(), key: key, kid: auth.KeyID(&key.PublicKey)}
	h.keys = auth.KeySet{h.kid: &key.PublicKey}
	h.tokens = auth.NewVerifier(auth.VerifierConfig{Logger: slog.Default(), Keys: func(context.Context) (auth.KeySet, error) {
		h.keysMu.Lock()
		defer h.keysMu.Unlock()
		return h.keys, nil
	}})
	if err := h.tokens.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	env := environment.Environment{Name: "test", Genesis: time.Now().Add(-100 * time.Second), SlotLength: 2 * time.Second}
	deps.Model, deps.Tokens, deps.Clock, deps.Logger = h.model, countedTokens{h.tokens, &h.verified}, env, slog.Default()
	h.srv = NewServer(cfg, deps)
	h.http = httptest.NewServer(h.srv)
	h.url = "ws" + strings.TrimPrefix(h.http.URL, "http")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("server Run: %v", err)
		}
		h.http.Close()
	})
	return h
}

// countedTokens is a TokenVerifier that counts what it is asked.
type countedTokens struct {
	*auth.Verifier
	asked *atomic.Int64
}

func (c countedTokens) Verify(ctx context.Context, token string) (*auth.Claims, error) {
	defer c.asked.Add(1)
	return c.Verifier.Verify(ctx, token)
}

// testClock is the server's clock (Config.Now) in a test that sets it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock(now time.Time) *testClock { return &testClock{now: now} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// token signs an access token of user that expires at exp.
func (h *harness) token(user int64, exp time.Time) string {
	h.t.Helper()
	return h.sessionToken(user, 0, exp)
}

// sessionToken signs an access token of user's login session that
// expires at exp.
func (h *harness) sessionToken(user, session int64, exp time.Time) string {
	h.t.Helper()
	c := &auth.Claims{User: auth.TokenUser{UserID: user, Address: fmt.Sprintf("0x%040x", user), Roles: []string{auth.RoleUser}},
		AccessType: auth.AccessType, SessionID: session, RegisteredClaims: jwt.RegisteredClaims{
			IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Second)), ExpiresAt: jwt.NewNumericDate(exp)}}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = h.kid
	s, err := tok.SignedString(h.key)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// waitSessionChecks waits until the server has checked the sessions n
// times since it was called, with one logged-in socket whose token has not
// expired. A check under way when it is called may have read the clock
// before; the next one starts after it ends, so of n >= 2 checks at least
// n-1 read the clock as it is now.
func (h *harness) waitSessionChecks(n int64) {
	h.t.Helper()
	from := h.verified.Load()
	poll.Before(h.t, fmt.Sprintf("%d session checks", n), time.Now().Add(poll.Timeout), func() bool { return h.verified.Load() >= from+n },
		func() string {
			return fmt.Sprintf("%d; a socket whose session ended is checked no more", h.verified.Load()-from)
		})
}

// apply feeds one record to the model as the market feed would.
func (h *harness) apply(typ string, payload any) {
	h.t.Helper()
	h.n++
	e, err := topics.NewEnvelope(typ, 1, fmt.Sprintf("test:%d", h.n), time.UnixMilli(int64(1_000_000+h.n)), payload)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.model.Apply(e); err != nil {
		h.t.Fatal(err)
	}
	h.model.Flush()
}

// open makes a market of slot visible and open.
func (h *harness) open(slot uint64, f topics.Family) {
	h.t.Helper()
	o := topics.MarketOpen{Slot: slot, Family: f, PriceStep: "0.0001", MinPrice: "0.0001", MaxPrice: "100",
		SellerUserID: 1, SellerAccountID: 2, TotalGas: 36_000_000, TotalPreconf: 18_000_000,
		MaturityTime: 9_000_000_000_000, TrxSubmitTime: 9_000_000_001_000, BlockTime: 9_000_000_002_000, FinalityTime: 9_000_000_900_000}
	if f == topics.InclusionPreconf {
		o.PriceStep, o.MinPrice, o.MaxPrice = "0.000000001", "0.000000001", "0.000001"
		o.QuantityStep, o.MinQuantity, o.MaxQuantity = "1000", "21000", "18000000"
	}
	h.apply(topics.TypeMarketOpen, o)
	h.apply(topics.TypeMarketStatus, topics.MarketStatus{InstrumentID: topics.InstrumentID(f, slot), Slot: slot,
		MarketID: topics.MarketID(f, slot), Status: topics.MarketStatusOpen, AvailablePreconf: 18_000_000, TotalPreconf: 18_000_000})
}

func orderEvent(user, id int64, instrument string, buy bool, price, qty, done string, status int) topics.OrderEvent {
	f, slot, _ := topics.ParseInstrumentID(instrument)
	return topics.OrderEvent{CommandID: fmt.Sprintf("cmd:%d:%d", id, status), OrderID: id, UserID: user, AccountID: user * 10,
		MarketID: topics.MarketID(f, slot), InstrumentID: instrument, Slot: slot, Side: buy, OrderType: 2,
		Price: price, Quantity: qty, Fulfilled: done, Status: status}
}

// client is one test WebSocket.
type client struct {
	t    testing.TB
	conn *websocket.Conn
}

func (h *harness) dial(header http.Header) *client {
	h.t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(h.url, header)
	if err != nil {
		h.t.Fatalf("dial: %v (%v)", err, resp)
	}
	h.t.Cleanup(func() { conn.Close() })
	return &client{t: h.t, conn: conn}
}

func (c *client) send(v any) {
	c.t.Helper()
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(v)
	}
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatal(err)
	}
}

// msg is any server message, decoded loosely.
type msg struct {
	raw   string
	Event string          `json:"event"`
	Code  int             `json:"code"`
	Msg   string          `json:"msg"`
	Arg   *Arg            `json:"arg"`
	E     string          `json:"e"`
	Time  int64           `json:"E"`
	S     string          `json:"s"`
	A     string          `json:"a"`
	Q     string          `json:"q"`
	P     json.RawMessage `json:"P"`
	User  int64           `json:"userId"`
}

func (c *client) next() msg {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(poll.Timeout))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	m := msg{raw: string(b)}
	if string(b) != "pong" {
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("server sent non-JSON %q", b)
		}
	}
	return m
}

// upTo reads messages until pong: everything the server queued before it
// answered a ping, in order.
func (c *client) upTo() []msg {
	c.t.Helper()
	c.send("ping")
	var out []msg
	for {
		m := c.next()
		if m.raw == "pong" {
			return out
		}
		out = append(out, m)
	}
}

// expect reads one message and checks it is the event with code.
func (c *client) expect(event string, code int) msg {
	c.t.Helper()
	m := c.next()
	if m.Event != event || m.Code != code {
		c.t.Fatalf("got %s, want event %s code %d", m.raw, event, code)
	}
	return m
}

func (c *client) login(token string) msg {
	c.t.Helper()
	c.send(map[string]any{"op": "login", "args": []any{map[string]string{"accessToken": token}}})
	return c.expect("login", 0)
}

func (c *client) subscribe(args ...map[string]string) {
	c.t.Helper()
	c.send(map[string]any{"op": "subscribe", "args": args})
}

func decodeP[T any](t testing.TB, m msg) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m.P, &v); err != nil {
		t.Fatalf("payload of %s: %v", m.raw, err)
	}
	return v
}
