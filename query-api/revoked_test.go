package queryapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/poll"
)

// TestRevokedSessionIsRefusedOnPrivateRoutes: once ingress revokes a
// login session (logout, reuse of a refresh credential), the private
// routes of query-api refuse its access token from the verifier's next
// read of the revoked sessions, while the service keeps running
// (docs/api.md "Access tokens"). Two sessions are revoked one after the
// other, the second once the first is refused: the second needs a read
// made after one that had seen the first, so the sessions are read again
// while the service runs, not only as it starts.
func TestRevokedSessionIsRefusedOnPrivateRoutes(t *testing.T) {
	s, pool := newService(t, "dev", "", nil)
	is := newIssuer(t, s, pool)
	alice := is.user(t, "0x00000000000000000000000000000000000000a1")
	ctx := t.Context()
	session := func() (int64, string) {
		t.Helper()
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
		return sid, token
	}
	first, firstToken := session()
	second, secondToken := session()
	// The keys are reloaded less often than a wait lasts, so only the
	// reading of the revoked sessions can refuse a token.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.keys.Run(runCtx, 2*poll.Timeout) }()
	defer func() { stop(); <-done }()

	path := "/api/v1/user/account/" + itoa(alice.cur)
	for _, token := range []string{firstToken, secondToken} {
		if r := getAs(t, s.Handler(), token, path); r.Status != 200 {
			t.Fatalf("before the revocation: %d %q", r.Status, r.Body.Message)
		}
	}
	revoke := func(what string, sid int64, token string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoke_reason = 'logout' WHERE session_id = $1`, sid); err != nil {
			t.Fatal(err)
		}
		var r reply
		poll.Before(t, "the token of the "+what+" revoked session refused", time.Now().Add(poll.Timeout), func() bool {
			r = getAs(t, s.Handler(), token, path)
			return r.Status == 401 && r.Body.Code == 1
		}, func() string { return fmt.Sprintf("%d %q", r.Status, r.Body.Message) })
	}
	revoke("first", first, firstToken)
	revoke("second", second, secondToken)
	if r := getAs(t, s.Handler(), alice.token, path); r.Status != 200 {
		t.Fatalf("a token of no revoked session: %d %q", r.Status, r.Body.Message)
	}
}
