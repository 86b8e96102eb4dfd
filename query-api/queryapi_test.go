package queryapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type reply struct {
	Status int
	Body   struct {
		Success bool            `json:"success"`
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func get(t *testing.T, h http.Handler, path string) reply {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	r := reply{Status: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), &r.Body); err != nil {
		t.Fatalf("GET %s: body is not JSON: %s", path, rec.Body)
	}
	return r
}

func newService(t testing.TB, envName, contract string, dbErr func() error) (*Service, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	env, err := environment.Lookup(envName)
	if err != nil {
		t.Fatal(err)
	}
	if dbErr == nil {
		dbErr = func() error { return nil }
	}
	s, err := New(context.Background(), Config{Environment: env, CollateralContract: contract},
		Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: dbErr})
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

func TestPublicReferenceEndpoints(t *testing.T) {
	s, _ := newService(t, "hoodi", "0x00000000000000000000000000000000000000AB", nil)
	h := s.Handler()
	cases := []struct {
		path string
		want string
	}{
		{"/api/v1/p/network?chainId=1", `{"network":{"networkId":1,"chainId":1,"name":"Ethereum","enable":true,"visible":true}}`},
		{"/api/v1/p/network?chainId=0x88BB0", `{"network":{"networkId":2,"chainId":560048,"name":"Hoodi","enable":true,"visible":true}}`},
		{"/api/v1/p/tokens", `{"tokens":[{"tokenId":1,"code":"ETH","name":"Ether","tokenAddress":"0x0000000000000000000000000000000000000000","decimals":18,"nativeToken":true,"withdrawFee":"0.0001","price":"1"}]}`},
		{"/api/v1/p/user/fees", `{"buyFeeRate":"0.001","primarySellFeeRate":"0.02","secondarySellFeeRate":"0.005"}`},
		{"/api/v1/p/funding/contractAddress", `{"contractAddress":"0x00000000000000000000000000000000000000ab"}`},
		{"/api/v1/p/funding/withdraw/dailyWithdrawLimits", `{"dailyWithdrawLimits":[{"tokenId":1,"chainId":560048,"tokenAddress":"0x0000000000000000000000000000000000000000","withdrawFee":"0.0001","dailyWithdrawLimit":"1000","remainingWithdrawLimit":"1000"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			r := get(t, h, tc.path)
			if r.Status != 200 || !r.Body.Success {
				t.Fatalf("status %d success %v: %s", r.Status, r.Body.Success, r.Body.Message)
			}
			if string(r.Body.Data) != tc.want {
				t.Fatalf("data\n got %s\nwant %s", r.Body.Data, tc.want)
			}
		})
	}
}

// TestHeadIsAnsweredAsGet: the gateway sends HEAD to the reads; each is
// answered with its GET's status and headers and no body, on a real
// server as on a handler called directly.
func TestHeadIsAnsweredAsGet(t *testing.T) {
	s, _ := newService(t, "hoodi", "0x00000000000000000000000000000000000000AB", nil)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/api/v1/p/tokens", 200},
		{"/api/v1/p/network?chainId=x", 400},
		{"/api/v1/user/info", 401},
		{"/api/v1/nope", 404},
	} {
		resp, err := http.Head(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(body) != 0 || resp.Header.Get("X-Request-ID") == "" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("HEAD %s: %d %q %v, want %d with the GET's headers and no body", tc.path, resp.StatusCode, body, resp.Header, tc.status)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("HEAD", tc.path, nil))
		if rec.Code != tc.status || rec.Body.Len() != 0 {
			t.Errorf("HEAD %s on the handler: %d %q, want %d and no body", tc.path, rec.Code, rec.Body, tc.status)
		}
	}
}

func TestNetworkRejectsBadChainID(t *testing.T) {
	s, _ := newService(t, "mainnet", "", nil)
	for _, q := range []string{"", "?chainId=", "?chainId=abc", "?chainId=0", "?chainId=-1", "?chainId=1.5"} {
		r := get(t, s.Handler(), "/api/v1/p/network"+q)
		if r.Status != 400 || r.Body.Code != 1001 || !contains(r.Body.Message, "chainId") {
			t.Errorf("%q: status %d code %d message %q", q, r.Status, r.Body.Code, r.Body.Message)
		}
	}
	r := get(t, s.Handler(), "/api/v1/p/network?chainId=5")
	if r.Status != 200 || r.Body.Success || r.Body.Code != 1002 {
		t.Errorf("unknown chain: status %d success %v code %d", r.Status, r.Body.Success, r.Body.Code)
	}
}

func TestContractAddressUnsetIsRefused(t *testing.T) {
	s, _ := newService(t, "mainnet", "", nil)
	r := get(t, s.Handler(), "/api/v1/p/funding/contractAddress")
	if r.Status != 200 || r.Body.Success || r.Body.Code != 1002 || !contains(r.Body.Message, "chainId 1") {
		t.Fatalf("status %d success %v code %d %q", r.Status, r.Body.Success, r.Body.Code, r.Body.Message)
	}
}

// A COLLATERAL_CONTRACT that is not an address stops the start with a
// message naming the variable, before Postgres is asked to store it (its
// check constraint answered with the column's name only).
func TestMalformedContractAddressIsRefused(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	env, err := environment.Lookup("mainnet")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"0x1234", "not-an-address", "4838b106fce9647bdf1e7877bf73ce8b0bad5f97",
		"0x4838b106fce9647bdf1e7877bf73ce8b0bad5f9z", "0x4838b106fce9647bdf1e7877bf73ce8b0bad5f9700"} {
		_, err := New(context.Background(), Config{Environment: env, CollateralContract: bad},
			Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DBErr: func() error { return nil }})
		if err == nil || !contains(err.Error(), "COLLATERAL_CONTRACT") {
			t.Errorf("%q: error %v, want one naming COLLATERAL_CONTRACT", bad, err)
		}
	}
	var stored *string
	if err := pool.QueryRow(context.Background(), `SELECT collateral_contract FROM networks WHERE chain_id = 1`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != nil && *stored != "" {
		t.Errorf("a refused address was stored: %q", *stored)
	}
	s, _ := newService(t, "mainnet", "0x4838B106FCe9647Bdf1E7877BF73cE8B0BAD5f97", nil)
	if r := get(t, s.Handler(), "/api/v1/p/funding/contractAddress"); !r.Body.Success {
		t.Errorf("a well-formed address: code %d %q", r.Body.Code, r.Body.Message)
	}
}

func TestReloadPicksUpChangedReferenceData(t *testing.T) {
	s, pool := newService(t, "mainnet", "", nil)
	if _, err := pool.Exec(context.Background(), `UPDATE fee_schedules SET buy_fee_rate = 0.0025 WHERE user_class = 1`); err != nil {
		t.Fatal(err)
	}
	if err := s.ref.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := get(t, s.Handler(), "/api/v1/p/user/fees")
	if !contains(string(r.Body.Data), `"buyFeeRate":"0.0025"`) {
		t.Fatalf("fees after reload: %s", r.Body.Data)
	}
}

func TestReferenceAnswers503WhilePostgresDown(t *testing.T) {
	down := errors.New("connection refused")
	s, _ := newService(t, "mainnet", "", func() error { return down })
	r := get(t, s.Handler(), "/api/v1/p/tokens")
	if r.Status != 503 || r.Body.Code != 21 {
		t.Fatalf("status %d code %d", r.Status, r.Body.Code)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestWebSocketRefusalCarriesRequestID: /ws is served beside the engine,
// and its refusals carry X-Request-ID as every answer of the interface
// does (platform/api/openapi.yaml), the client's own when well formed.
func TestWebSocketRefusalCarriesRequestID(t *testing.T) {
	s, _ := newService(t, "hoodi", "0x00000000000000000000000000000000000000AB", nil)
	cases := []struct {
		name, sent string
		want       func(string) bool
	}{
		{"assigned", "", func(id string) bool { return id != "" }},
		{"echoed", "client-id-1", func(id string) bool { return id == "client-id-1" }},
		{"malformed replaced", "bad id", func(id string) bool { return id != "" && id != "bad id" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/ws", nil)
			if tc.sent != "" {
				req.Header.Set("X-Request-ID", tc.sent)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if id := rec.Header().Get("X-Request-ID"); rec.Code != 400 || !tc.want(id) {
				t.Fatalf("GET /ws without an upgrade: %d, X-Request-ID %q", rec.Code, id)
			}
		})
	}
}
