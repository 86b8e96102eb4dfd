package queryapi

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/auth"
)

// TestRevokedSessionIsRefusedOnPrivateRoutes: once ingress revokes a
// login session (logout, reuse of a refresh credential), the private
// routes of query-api refuse its access token within a second, while the
// service keeps running (docs/api.md "Access tokens").
func TestRevokedSessionIsRefusedOnPrivateRoutes(t *testing.T) {
	s, pool := newService(t, "dev", "", nil)
	is := newIssuer(t, s, pool)
	alice := is.user(t, "0x00000000000000000000000000000000000000a1")
	ctx := t.Context()
	var sid int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (user_id, user_agent, expires_at) VALUES ($1, 'test', now() + interval '1 hour') RETURNING session_id`, alice.id).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, &auth.Claims{
		User: auth.TokenUser{UserID: alice.id, Roles: []string{auth.RoleUser}}, AccessType: auth.AccessType, SessionID: sid,
		RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
	})
	tok.Header["kid"] = is.kid
	token, err := tok.SignedString(is.key)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.keys.Run(runCtx, time.Minute) }()
	defer func() { stop(); <-done }()

	path := "/api/v1/user/account/" + itoa(alice.cur)
	if r := getAs(t, s.Handler(), token, path); r.Status != 200 {
		t.Fatalf("before the revocation: %d %q", r.Status, r.Body.Message)
	}
	if _, err := pool.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoke_reason = 'logout' WHERE session_id = $1`, sid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		r := getAs(t, s.Handler(), token, path)
		if r.Status == 401 && r.Body.Code == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a second after the revocation: %d %q", r.Status, r.Body.Message)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := getAs(t, s.Handler(), alice.token, path); r.Status != 200 {
		t.Fatalf("a token of no revoked session: %d %q", r.Status, r.Body.Message)
	}
}
