package ingress_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress/internal/login"
	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/eip712"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

const walletAgent = "wallet-test/1.0"

// loginStack is an ingress serving the login routes on its own database.
type loginStack struct {
	t       *testing.T
	pool    *pgxpool.Pool
	key     *ecdsa.PrivateKey // signs the access tokens
	handler http.Handler
}

func newLoginStack(t *testing.T) *loginStack {
	t.Helper()
	s := &loginStack{t: t, pool: pgtest.New(t, schema.Migrations()), key: newSigningKey(t)}
	svc, err := newAuthService(t, s.pool, s.key)
	if err != nil {
		t.Fatal(err)
	}
	s.handler = svc.Handler()
	return s
}

// reply is one answer of the REST frame.
type reply struct {
	status  int
	header  http.Header
	raw     string
	cookies []*http.Cookie
	body    struct {
		Success bool            `json:"success"`
		Code    int             `json:"code"`
		Data    json.RawMessage `json:"data"`
	}
}

func (r reply) cookie() *http.Cookie {
	for _, c := range r.cookies {
		if c.Name == login.CookieName {
			return c
		}
	}
	return nil
}

// post sends params as a form body, or as a JSON object body when asJSON,
// with the wallet's User-Agent unless header replaces it.
func (s *loginStack) post(path string, params map[string]string, asJSON bool, header map[string]string) reply {
	s.t.Helper()
	var body, contentType string
	switch {
	case params == nil:
	case asJSON:
		b, _ := json.Marshal(params)
		body, contentType = string(b), "application/json"
	default:
		form := url.Values{}
		for k, v := range params {
			form.Set(k, v)
		}
		body, contentType = form.Encode(), "application/x-www-form-urlencoded"
	}
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", walletAgent)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	r := reply{status: rec.Code, header: rec.Header(), raw: rec.Body.String(), cookies: rec.Result().Cookies()}
	_ = json.Unmarshal(rec.Body.Bytes(), &r.body)
	return r
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func newLoginWallet(t *testing.T) eip712.Wallet {
	t.Helper()
	w, err := eip712.NewWallet()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// session is the data of verify and refresh.
type session struct {
	User struct {
		UserID   int64  `json:"userId"`
		Address  string `json:"address"`
		Accounts []struct {
			Type         int     `json:"type"`
			CashTokenIDs []int64 `json:"cashTokenIds"`
		} `json:"accounts"`
	} `json:"user"`
	AccessToken struct {
		Token string `json:"token"`
	} `json:"accessToken"`
}

func (s *loginStack) session(r reply) session {
	s.t.Helper()
	var out session
	if err := json.Unmarshal(r.body.Data, &out); err != nil || out.AccessToken.Token == "" {
		s.t.Fatalf("no session in %d %s: %v", r.status, r.raw, err)
	}
	return out
}

// login runs the challenge and its verification under prefix and returns
// the verify answer.
func (s *loginStack) login(w eip712.Wallet, prefix string, asJSON bool) reply {
	s.t.Helper()
	ch := s.post(prefix+"/user/login", map[string]string{"addr": w.Address, "name": "Alice"}, asJSON, nil)
	var c struct {
		EIP712Message string `json:"eip712Message"`
		NonceHash     string `json:"nonceHash"`
	}
	if ch.status != 200 || json.Unmarshal(ch.body.Data, &c) != nil || c.NonceHash == "" {
		s.t.Fatalf("%s/user/login: %d %s", prefix, ch.status, ch.raw)
	}
	sig, err := w.Sign(c.EIP712Message)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.post(prefix+"/user/login/verify", map[string]string{"addr": w.Address, "nonceHash": c.NonceHash, "signature": sig}, asJSON, nil)
}

func (s *loginStack) count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.pool.QueryRow(s.t.Context(), query, args...).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// TestLoginFlowOnBothPresentations: login, verify, refresh and logout
// behave the same under /api/v1 (form bodies) and /v1 (JSON bodies); only
// the refresh cookie's path follows the presentation.
func TestLoginFlowOnBothPresentations(t *testing.T) {
	s := newLoginStack(t)
	for _, tc := range []struct {
		prefix string
		asJSON bool
	}{{"/api/v1", false}, {"/v1", true}} {
		t.Run(tc.prefix, func(t *testing.T) {
			w := newLoginWallet(t)
			cookiePath := tc.prefix + "/user/login"
			checkCookie := func(step string, r reply) *http.Cookie {
				t.Helper()
				ck := r.cookie()
				// A refresh's cookie lasts what the session has left.
				if ck == nil || ck.Value == "" || ck.Path != cookiePath || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.MaxAge <= 0 || ck.MaxAge > 3600 {
					t.Fatalf("%s: refresh cookie %+v, want one for %s lasting the session (at most 3600 s)", step, ck, cookiePath)
				}
				return ck
			}

			v := s.login(w, tc.prefix, tc.asJSON)
			if v.status != 200 || !v.body.Success {
				t.Fatalf("verify: %d %s", v.status, v.raw)
			}
			sess := s.session(v)
			if sess.User.Address != strings.ToLower(w.Address) || len(sess.User.Accounts) != 2 {
				t.Fatalf("verify user: %s", v.body.Data)
			}
			first := checkCookie("verify", v)
			if r := s.post("/api/v1/user/update", map[string]string{"displayName": "Bob"}, false, bearer(sess.AccessToken.Token)); r.status != 200 {
				t.Fatalf("the access token of verify on a private route: %d %s", r.status, r.raw)
			}

			ref := s.post(tc.prefix+"/user/login/refresh", map[string]string{"refreshToken": first.Value}, tc.asJSON, nil)
			if ref.status != 200 || !ref.body.Success {
				t.Fatalf("refresh: %d %s", ref.status, ref.raw)
			}
			refreshed := s.session(ref)
			if refreshed.User.UserID != sess.User.UserID || len(refreshed.User.Accounts) != 2 || len(refreshed.User.Accounts[0].CashTokenIDs) != 1 {
				t.Fatalf("refresh user: %s", ref.body.Data)
			}
			second := checkCookie("refresh", ref)
			if second.Value == first.Value {
				t.Fatal("refresh did not rotate the credential")
			}

			out := s.post(tc.prefix+"/user/logout", nil, false, bearer(refreshed.AccessToken.Token))
			if out.status != 200 || out.raw != "{}" {
				t.Fatalf("logout: %d %s", out.status, out.raw)
			}
			if ck := out.cookie(); ck == nil || ck.MaxAge >= 0 || ck.Path != cookiePath {
				t.Fatalf("logout does not clear the cookie of %s: %+v", cookiePath, ck)
			}
			if n := s.count(`SELECT count(*) FROM sessions WHERE user_id = $1 AND revoke_reason = 'logout'`, sess.User.UserID); n != 1 {
				t.Fatalf("%d sessions revoked by logout, want 1", n)
			}
			if r := s.post(tc.prefix+"/user/login/refresh", map[string]string{"refreshToken": second.Value}, tc.asJSON, nil); r.status != 401 || r.body.Code != 1 || r.cookie() != nil {
				t.Fatalf("refresh after logout: %d %s", r.status, r.raw)
			}
		})
	}
}

// TestBearerTokenRefusals: each kind of forged or stale access token on a
// private route is 401 code 1 with WWW-Authenticate: Bearer (docs/codes.md),
// while the genuine token of the same user passes.
func TestBearerTokenRefusals(t *testing.T) {
	s := newLoginStack(t)
	sess := s.session(s.login(newLoginWallet(t), "/v1", true))
	kid := auth.KeyID(&s.key.PublicKey)
	now := time.Now()
	claims := func(iat, exp time.Time) *auth.Claims {
		return &auth.Claims{
			User:       auth.TokenUser{UserID: sess.User.UserID, Address: sess.User.Address, Roles: []string{auth.RoleUser}},
			AccessType: auth.AccessType,
			RegisteredClaims: jwt.RegisteredClaims{
				IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp),
			},
		}
	}
	sign := func(method jwt.SigningMethod, key any, kid string, c *auth.Claims) string {
		tok := jwt.NewWithClaims(method, c)
		tok.Header["kid"] = kid
		out, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	publicPEM, err := auth.EncodePublicKey(&s.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	notYet := claims(now, now.Add(time.Hour))
	notYet.NotBefore = jwt.NewNumericDate(now.Add(10 * time.Minute))
	stranger := newSigningKey(t)

	tokens := []struct {
		name, token string
		ok          bool
	}{
		{"genuine", sign(jwt.SigningMethodES256, s.key, kid, claims(now, now.Add(time.Hour))), true},
		{"alg none", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims(now, now.Add(time.Hour))), false},
		{"HS256 keyed with the public key", sign(jwt.SigningMethodHS256, []byte(publicPEM), kid, claims(now, now.Add(time.Hour))), false},
		{"unknown kid", sign(jwt.SigningMethodES256, stranger, auth.KeyID(&stranger.PublicKey), claims(now, now.Add(time.Hour))), false},
		{"right key, unknown kid", sign(jwt.SigningMethodES256, s.key, "no-such-kid", claims(now, now.Add(time.Hour))), false},
		{"expired", sign(jwt.SigningMethodES256, s.key, kid, claims(now.Add(-2*time.Hour), now.Add(-time.Hour))), false},
		{"issued in the future", sign(jwt.SigningMethodES256, s.key, kid, claims(now.Add(10*time.Minute), now.Add(time.Hour))), false},
		{"not valid before a future nbf", sign(jwt.SigningMethodES256, s.key, kid, notYet), false},
	}
	for _, tc := range tokens {
		t.Run(tc.name, func(t *testing.T) {
			r := s.post("/api/v1/user/update", map[string]string{"displayName": "Mallory"}, false, bearer(tc.token))
			if tc.ok {
				if r.status != 200 || !r.body.Success {
					t.Fatalf("%d %s", r.status, r.raw)
				}
				return
			}
			if r.status != 401 || r.body.Code != 1 || r.body.Success || r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Fatalf("%d %s %v, want 401 code 1 with WWW-Authenticate: Bearer", r.status, r.raw, r.header)
			}
		})
	}
	if n := s.count(`SELECT count(*) FROM users WHERE display_name = 'Mallory'`); n != 1 {
		t.Fatalf("%d users renamed, want only the genuine token's change", n)
	}
}

// TestRefreshFromAnotherUserAgent: a credential presented by another
// User-Agent is refused without rotating anything: no new credential row,
// no cookie, and the credential still works from its own agent.
func TestRefreshFromAnotherUserAgent(t *testing.T) {
	s := newLoginStack(t)
	for _, prefix := range []string{"/api/v1", "/v1"} {
		asJSON := prefix == "/v1"
		v := s.login(newLoginWallet(t), prefix, asJSON)
		cred := v.cookie()
		if v.status != 200 || cred == nil {
			t.Fatalf("%s verify: %d %s", prefix, v.status, v.raw)
		}
		user := s.session(v).User.UserID
		const credentials = `SELECT count(*) FROM refresh_tokens JOIN sessions USING (session_id) WHERE user_id = $1`
		r := s.post(prefix+"/user/login/refresh", map[string]string{"refreshToken": cred.Value}, asJSON, map[string]string{"User-Agent": "other-agent/2"})
		if r.status != 401 || r.body.Code != 1 || r.header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("%s refresh from another agent: %d %s", prefix, r.status, r.raw)
		}
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s refresh from another agent set cookies: %v", prefix, r.header.Values("Set-Cookie"))
		}
		if n := s.count(credentials, user); n != 1 {
			t.Fatalf("%s refresh from another agent: the session has %d credentials, want its first only", prefix, n)
		}
		if n := s.count(credentials+` AND rotated_at IS NULL AND revoked_at IS NULL`, user); n != 1 {
			t.Fatalf("%s refresh from another agent rotated the credential or revoked the session", prefix)
		}
		if r := s.post(prefix+"/user/login/refresh", map[string]string{"refreshToken": cred.Value}, asJSON, nil); r.status != 200 || r.cookie() == nil {
			t.Fatalf("%s refresh from the session's agent afterwards: %d %s", prefix, r.status, r.raw)
		}
		if n := s.count(credentials, user); n != 2 {
			t.Fatalf("%s refresh from the session's agent: %d credentials, want the first and its rotation", prefix, n)
		}
	}
}

// loggedIn logs a new wallet in under /api/v1 and returns its user id and
// refresh cookie.
func (s *loginStack) loggedIn() (int64, *http.Cookie) {
	s.t.Helper()
	v := s.login(newLoginWallet(s.t), "/api/v1", false)
	cred := v.cookie()
	if v.status != 200 || cred == nil {
		s.t.Fatalf("verify: %d %s", v.status, v.raw)
	}
	return s.session(v).User.UserID, cred
}

// TestConcurrentRefreshesOfOneCredential: two refreshes that present the
// same credential at once cannot both rotate it. The second one to run
// sees the credential rotated by the first, which is reuse: the session
// is revoked and no second successor credential exists.
func TestConcurrentRefreshesOfOneCredential(t *testing.T) {
	s := newLoginStack(t)
	user, cred := s.loggedIn()

	// Hold the session row so that both refreshes read the credential
	// and then queue on the lock, as two requests arriving together do.
	ctx := t.Context()
	hold, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `SELECT 1 FROM sessions WHERE user_id = $1 FOR UPDATE`, user); err != nil {
		t.Fatal(err)
	}
	replies := make(chan reply, 2)
	for range 2 {
		go func() {
			replies <- s.post("/api/v1/user/login/refresh", map[string]string{"refreshToken": cred.Value}, false, nil)
		}()
	}
	for s.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	won := 0
	for range 2 {
		if r := <-replies; r.status == 200 {
			won++
		} else if r.status != 401 || r.body.Code != 1 {
			t.Fatalf("refresh: %d %s", r.status, r.raw)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent refreshes of one credential succeeded, want 1", won)
	}
	if n := s.count(`SELECT count(*) FROM refresh_tokens JOIN sessions USING (session_id) WHERE user_id = $1`, user); n != 2 {
		t.Fatalf("the session has %d credentials, want the first and one successor", n)
	}
	if n := s.count(`SELECT count(*) FROM sessions WHERE user_id = $1 AND revoke_reason = 'reuse'`, user); n != 1 {
		t.Fatal("presenting the rotated credential again did not revoke the session")
	}
}

// TestRefreshCookieEndsWithTheSession: rotation does not extend a
// session, so the cookie of a refresh lives only as long as the session
// has left, not a whole session lifetime.
func TestRefreshCookieEndsWithTheSession(t *testing.T) {
	s := newLoginStack(t)
	user, cred := s.loggedIn()
	if _, err := s.pool.Exec(t.Context(), `UPDATE sessions SET expires_at = now() + interval '600 seconds' WHERE user_id = $1`, user); err != nil {
		t.Fatal(err)
	}
	r := s.post("/api/v1/user/login/refresh", map[string]string{"refreshToken": cred.Value}, false, nil)
	ck := r.cookie()
	if r.status != 200 || ck == nil {
		t.Fatalf("refresh: %d %s", r.status, r.raw)
	}
	if ck.MaxAge <= 0 || ck.MaxAge > 600 {
		t.Fatalf("refresh cookie Max-Age %d, want at most the 600 s the session has left", ck.MaxAge)
	}
}
