package ingress_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// newLimitedLoginStack is a login stack with the production per-address
// rate (10 a minute, burst 10), a per-IP rate of perIP, and the client IP
// taken from X-Client-IP.
func newLimitedLoginStack(t *testing.T, perIP ingress.Rate) *loginStack {
	t.Helper()
	s := &loginStack{t: t, pool: pgtest.New(t, schema.Migrations()), key: newSigningKey(t)}
	env, _ := environment.Lookup("dev")
	svc, err := ingress.New(t.Context(), ingress.Config{Environment: env, MaxInFlight: 64, Auth: ingress.AuthConfig{
		SigningKey: s.key, Product: "Test", AccessTTL: time.Hour, SessionTTL: time.Hour, NonceTTL: time.Minute,
		RatePerIP: perIP, RatePerAddress: ingress.Rate{PerMinute: 10, Burst: 10},
		ClientIPHeader: "X-Client-IP", KeysRefresh: time.Minute,
	}}, ingress.Deps{Pool: s.pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.handler = svc.Handler()
	return s
}

// TestUnprovenLoginsDoNotLockTheWalletOut: challenges and failed verifies
// for someone else's address, from many client IPs, spend none of that
// address's logins: its owner still logs in. Only logins whose signature
// holds use up the address's allowance.
func TestUnprovenLoginsDoNotLockTheWalletOut(t *testing.T) {
	s := newLimitedLoginStack(t, ingress.Rate{PerMinute: 1000, Burst: 1000})
	victim := newLoginWallet(t)
	for i := range 30 {
		ip := map[string]string{"X-Client-IP": fmt.Sprintf("203.0.113.%d", i)}
		ch := s.post("/api/v1/user/login", map[string]string{"addr": victim.Address}, false, ip)
		var c struct {
			NonceHash string `json:"nonceHash"`
		}
		if ch.status != 200 || json.Unmarshal(ch.body.Data, &c) != nil {
			t.Fatalf("challenge %d for another's address: %d %s", i, ch.status, ch.raw)
		}
		bad := "0x" + fmt.Sprintf("%0130x", i+1)
		if r := s.post("/api/v1/user/login/verify", map[string]string{"addr": victim.Address, "nonceHash": c.NonceHash, "signature": bad}, false, ip); r.status != 401 {
			t.Fatalf("forged verify %d: %d %s", i, r.status, r.raw)
		}
	}
	for i := range 10 {
		if r := s.login(victim, "/api/v1", false); r.status != 200 {
			t.Fatalf("owner's login %d after the forged attempts: %d %s", i, r.status, r.raw)
		}
	}
	ch := s.post("/api/v1/user/login", map[string]string{"addr": victim.Address}, false, nil)
	var c struct {
		EIP712Message string `json:"eip712Message"`
		NonceHash     string `json:"nonceHash"`
	}
	if ch.status != 200 || json.Unmarshal(ch.body.Data, &c) != nil {
		t.Fatalf("challenge after ten logins: %d %s", ch.status, ch.raw)
	}
	sig, err := victim.Sign(c.EIP712Message)
	if err != nil {
		t.Fatal(err)
	}
	r := s.post("/api/v1/user/login/verify", map[string]string{"addr": victim.Address, "nonceHash": c.NonceHash, "signature": sig}, false, nil)
	if r.status != 429 || r.body.Code != 20 || r.header.Get("Retry-After") == "" {
		t.Fatalf("eleventh proven login within the minute: %d %s", r.status, r.raw)
	}
}

// TestUnprovenLoginsAreLimitedPerClientIP: one client IP asking for
// challenges of many addresses is refused once its own bucket is empty.
func TestUnprovenLoginsAreLimitedPerClientIP(t *testing.T) {
	s := newLimitedLoginStack(t, ingress.Rate{PerMinute: 5, Burst: 5})
	ip := map[string]string{"X-Client-IP": "198.51.100.7"}
	for i := range 6 {
		w := newLoginWallet(t)
		r := s.post("/api/v1/user/login", map[string]string{"addr": w.Address}, false, ip)
		want := 200
		if i == 5 {
			want = 429
		}
		if r.status != want {
			t.Fatalf("challenge %d from one IP: %d %s, want %d", i, r.status, r.raw, want)
		}
	}
}
