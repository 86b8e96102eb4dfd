package queryapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/auth"
)

// issuer signs access tokens the service accepts: its key is published
// in the service's database the way ingress publishes its own.
type issuer struct {
	pool *pgxpool.Pool
	key  *ecdsa.PrivateKey
	kid  string
}

func newIssuer(t testing.TB, s *Service, pool *pgxpool.Pool) *issuer {
	t.Helper()
	ctx := context.Background()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kid, err := auth.PublishKey(ctx, pool, &key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.keys.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	return &issuer{pool: pool, key: key, kid: kid}
}

// testUser is a user with a current account (cur) and a preconf trading
// account (pre), and an access token of that user.
type testUser struct {
	id, cur, pre int64
	token        string
}

// user inserts a user with its two accounts and signs a token for it.
func (is *issuer) user(t testing.TB, addr string) testUser {
	t.Helper()
	ctx := context.Background()
	var u testUser
	if err := is.pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ($1) RETURNING user_id`, addr).Scan(&u.id); err != nil {
		t.Fatal(err)
	}
	if err := is.pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 1, 'c') RETURNING account_id`, u.id).Scan(&u.cur); err != nil {
		t.Fatal(err)
	}
	if err := is.pool.QueryRow(ctx, `INSERT INTO accounts (user_id, type, name) VALUES ($1, 2, 'p') RETURNING account_id`, u.id).Scan(&u.pre); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, &auth.Claims{
		User: auth.TokenUser{UserID: u.id, Address: addr, Roles: []string{auth.RoleUser}}, AccessType: auth.AccessType,
		RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
	})
	tok.Header["kid"] = is.kid
	signed, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	u.token = signed
	return u
}

// getAs is get with the bearer token (none when token is "").
func getAs(t testing.TB, h http.Handler, token, path string) reply {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	h.ServeHTTP(rec, req)
	r := reply{Status: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		t.Fatalf("GET %s: body is not JSON: %s", path, rec.Body)
	}
	return r
}

// TestAccountReadRefusals: an account of another user is 403 whether or
// not it exists, and a malformed id is a 400 that quotes at most 40
// characters of it.
func TestAccountReadRefusals(t *testing.T) {
	s, pool := newService(t, "dev", "", nil)
	is := newIssuer(t, s, pool)
	alice := is.user(t, "0x00000000000000000000000000000000000000a1")
	bob := is.user(t, "0x00000000000000000000000000000000000000b0")
	long := strings.Repeat("9", 30) + strings.Repeat("a", 300)
	for _, tc := range []struct {
		name, path   string
		status, code int
		message      string
	}{
		{"own account", "/api/v1/user/account/" + itoa(alice.cur), 200, 0, ""},
		{"another user's account", "/api/v1/user/account/" + itoa(bob.cur), 403, 1, "account is not yours"},
		{"no such account", "/api/v1/user/account/999999", 403, 1, "account is not yours"},
		{"zero", "/api/v1/user/account/0", 400, 1001, `accountId must be a positive integer, got "0"`},
		{"long", "/api/v1/user/account/" + long, 400, 1001, `got "` + long[:40] + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := getAs(t, s.Handler(), alice.token, tc.path)
			if r.Status != tc.status || r.Body.Code != tc.code || !strings.HasSuffix(r.Body.Message, tc.message) {
				t.Fatalf("status %d code %d %q", r.Status, r.Body.Code, r.Body.Message)
			}
		})
	}
}
