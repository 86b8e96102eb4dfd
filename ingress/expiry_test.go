package ingress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// newBoundedOrderflow is the orderflow edges with a challenge rate of 3
// per client IP (X-Client-IP), sweeping expired challenges every 20ms
// while Run runs.
func newBoundedOrderflow(t *testing.T) (*ingress.Orderflow, *httptest.Server, *pgxpool.Pool) {
	o, srv, pool, _ := newBoundedOrderflowMetrics(t)
	return o, srv, pool
}

// newBoundedOrderflowMetrics is newBoundedOrderflow with the registry of
// its metrics.
func newBoundedOrderflowMetrics(t *testing.T) (*ingress.Orderflow, *httptest.Server, *pgxpool.Pool, *prometheus.Registry) {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	_, brokers := kafkatest.Start(t)
	reg := prometheus.NewRegistry()
	env, err := environment.Lookup("dev")
	if err != nil {
		t.Fatal(err)
	}
	o, err := ingress.NewOrderflow(ingress.Config{Environment: env, MaxInFlight: 64,
		Auth:      ingress.AuthConfig{Product: "Test", ClientIPHeader: "X-Client-IP"},
		Orderflow: ingress.OrderflowConfig{DefaultRefundPercent: 90, ChallengeRate: ingress.Rate{PerMinute: 1, Burst: 3}, ChallengeSweep: 20 * time.Millisecond}},
		ingress.OrderflowDeps{Pool: pool, Brokers: brokers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(o.AccountsHandler())
	t.Cleanup(func() {
		srv.Close()
		o.Close(context.Background())
	})
	return o, srv, pool, reg
}

func getChallenge(t *testing.T, srv *httptest.Server, addr, ip string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/auth/challenge?address="+addr, nil)
	req.Header.Set("X-Client-IP", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, env
}

func countRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChallengesAreBoundedPerClientAndAddress: one client IP gets its
// burst of API-key challenges and then 429 code 20 with Retry-After,
// while another IP still gets one; however many IPs ask for one
// address's challenges, it keeps only of.MaxChallengesPerAddress rows.
func TestChallengesAreBoundedPerClientAndAddress(t *testing.T) {
	_, srv, pool, reg := newBoundedOrderflowMetrics(t)
	for i := range 4 {
		addr := fmt.Sprintf("0x%040x", 0xa0+i)
		status, header, env := getChallenge(t, srv, addr, "203.0.113.1")
		switch {
		case i < 3 && status != 200:
			t.Fatalf("challenge %d within the burst: %d %v", i, status, env)
		case i == 3 && (status != 429 || env["code"] != float64(20) || header.Get("Retry-After") == ""):
			t.Fatalf("challenge beyond the burst: %d %v %v", status, header, env)
		}
	}
	refused := metricstest.NonZero(metricstest.Prefixed(metricstest.Gather(t, reg), "http_refusals_total"))
	if want := map[string]float64{`http_refusals_total{reason="rate_limit",service="ingress-orderflow",status="429"}`: 1}; !maps.Equal(refused, want) {
		t.Fatalf("refusals counted %v, want %v", refused, want)
	}
	const victim = "0x00000000000000000000000000000000000000b1"
	for i := range of.MaxChallengesPerAddress + 4 {
		if status, _, env := getChallenge(t, srv, victim, fmt.Sprintf("198.51.100.%d", i)); status != 200 {
			t.Fatalf("challenge from another IP: %d %v", status, env)
		}
	}
	if n := countRows(t, pool, `SELECT count(*) FROM orderflow_challenges WHERE address = $1`, victim); n != of.MaxChallengesPerAddress {
		t.Fatalf("%d challenges stored for one address, want %d", n, of.MaxChallengesPerAddress)
	}
}

// TestExpiredChallengesAreSwept: while the orderflow edges run, expired
// API-key challenges are deleted, used or not, and live ones stay.
func TestExpiredChallengesAreSwept(t *testing.T) {
	o, _, pool := newBoundedOrderflow(t)
	_, err := pool.Exec(t.Context(), `
		INSERT INTO orderflow_challenges (nonce, address, expires_at, used_at) VALUES
		('0x01', '0x00000000000000000000000000000000000000a1', now() - interval '1 minute', NULL),
		('0x02', '0x00000000000000000000000000000000000000a1', now() - interval '1 minute', now() - interval '2 minutes'),
		('0x03', '0x00000000000000000000000000000000000000a1', now() + interval '1 hour', NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	runUntilSwept(t, o.Run, func() bool {
		return countRows(t, pool, `SELECT count(*) FROM orderflow_challenges`) == 1
	})
	if n := countRows(t, pool, `SELECT count(*) FROM orderflow_challenges WHERE nonce = '0x03'`); n != 1 {
		t.Fatal("the live challenge was deleted")
	}
}

// TestExpiredLoginNoncesAreSwept: while ingress runs, expired login
// challenges are deleted and live ones stay.
func TestExpiredLoginNoncesAreSwept(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	env, _ := environment.Lookup("dev")
	svc, err := ingress.New(t.Context(), ingress.Config{Environment: env, MaxInFlight: 64, Auth: ingress.AuthConfig{
		SigningKey: newSigningKey(t), Product: "Test", AccessTTL: time.Hour, SessionTTL: time.Hour, NonceTTL: time.Minute,
		KeysRefresh: time.Minute, NonceSweep: 20 * time.Millisecond,
	}}, ingress.Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(t.Context(), `
		INSERT INTO login_nonces (nonce_hash, address, typed_data, expires_at) VALUES
		('0x00000001', '0x00000000000000000000000000000000000000a1', '{}', now() - interval '1 minute'),
		('0x00000002', '0x00000000000000000000000000000000000000a1', '{}', now() + interval '1 hour')`)
	if err != nil {
		t.Fatal(err)
	}
	runUntilSwept(t, svc.Run, func() bool {
		return countRows(t, pool, `SELECT count(*) FROM login_nonces`) == 1
	})
	if n := countRows(t, pool, `SELECT count(*) FROM login_nonces WHERE nonce_hash = '0x00000002'`); n != 1 {
		t.Fatal("the live nonce was deleted")
	}
}

// runUntilSwept runs run until swept reports true (or 10s pass), then
// stops it and waits for it to return.
func runUntilSwept(t *testing.T, run func(context.Context) error, swept func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !swept() {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("expired rows still there after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
