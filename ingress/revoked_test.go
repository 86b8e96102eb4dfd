package ingress_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// TestRevokedSessionsAccessTokensStopWorking: logout and the reuse of a
// rotated refresh credential revoke the session, and from the service's
// next read of the revoked sessions its access tokens are refused on
// private REST routes (docs/api.md "Access tokens"), not only at their exp
// nor at a reload of the signing keys.
func TestRevokedSessionsAccessTokensStopWorking(t *testing.T) {
	s := &loginStack{t: t, pool: pgtest.New(t, schema.Migrations()), key: newSigningKey(t)}
	svc, err := newAuthService(t, s.pool, s.key)
	if err != nil {
		t.Fatal(err)
	}
	s.handler = svc.Handler()
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("service Run: %v", err)
		}
	}()

	update := func(token string) reply {
		return s.post("/api/v1/user/update", map[string]string{"displayName": "Bob"}, false, bearer(token))
	}
	refused := func(what, token string) {
		t.Helper()
		var r reply
		poll.Before(t, what+": the access token refused", time.Now().Add(poll.Timeout), func() bool {
			r = update(token)
			return r.status == 401 && r.body.Code == 1 && r.header.Get("WWW-Authenticate") == "Bearer"
		}, func() string { return fmt.Sprintf("%d %s", r.status, r.raw) })
	}

	// Logout.
	{
		sess := s.session(s.login(newLoginWallet(t), "/api/v1", false))
		if r := update(sess.AccessToken.Token); r.status != 200 {
			t.Fatalf("before logout: %d %s", r.status, r.raw)
		}
		if r := s.post("/api/v1/user/logout", nil, false, bearer(sess.AccessToken.Token)); r.status != 200 {
			t.Fatalf("logout: %d %s", r.status, r.raw)
		}
		refused("after logout", sess.AccessToken.Token)
	}

	// A rotated refresh credential used again.
	{
		v := s.login(newLoginWallet(t), "/api/v1", false)
		first := v.cookie()
		ref := s.post("/api/v1/user/login/refresh", map[string]string{"refreshToken": first.Value}, false, nil)
		if ref.status != 200 {
			t.Fatalf("refresh: %d %s", ref.status, ref.raw)
		}
		other := s.session(ref)
		if r := update(other.AccessToken.Token); r.status != 200 {
			t.Fatalf("before the reuse: %d %s", r.status, r.raw)
		}
		if r := s.post("/api/v1/user/login/refresh", map[string]string{"refreshToken": first.Value}, false, nil); r.status != 401 {
			t.Fatalf("reuse of a rotated credential: %d %s", r.status, r.raw)
		}
		refused("after the reuse", other.AccessToken.Token)
		refused("the first token after the reuse", s.session(v).AccessToken.Token)
	}
}
