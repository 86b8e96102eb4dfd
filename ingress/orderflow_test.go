package ingress_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

type orderflowEdges struct {
	originator, searcher, accounts *httptest.Server
	store                          *of.KeyStore
	kafka                          *kgo.Client // reads what the edges published
}

func newOrderflowEdges(t *testing.T) *orderflowEdges {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	cl, brokers := kafkatest.Start(t)
	env, err := environment.Lookup("dev")
	if err != nil {
		t.Fatal(err)
	}
	o, err := ingress.NewOrderflow(ingress.Config{Environment: env, MaxInFlight: 64, Auth: ingress.AuthConfig{Product: "Test"},
		Orderflow: ingress.OrderflowConfig{DefaultRefundPercent: 90}},
		ingress.OrderflowDeps{Pool: pool, Brokers: brokers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	e := &orderflowEdges{
		originator: httptest.NewServer(o.OriginatorHandler()),
		searcher:   httptest.NewServer(o.SearcherHandler()),
		accounts:   httptest.NewServer(o.AccountsHandler()),
		store:      of.NewKeyStore(pool),
		kafka:      cl,
	}
	t.Cleanup(func() {
		e.originator.Close()
		e.searcher.Close()
		e.accounts.Close()
		o.Close(t.Context())
	})
	return e
}

type rpcReply struct {
	status int
	header http.Header
	body   struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

func callRPC(t *testing.T, url, method string, param any, header map[string]string) rpcReply {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": []any{param}})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := rpcReply{status: resp.StatusCode, header: resp.Header}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("%s: not JSON-RPC: %s", url, raw)
	}
	return r
}

// TestOrderflowKeysOverHTTP: the partner originator endpoint and the
// searcher endpoint answer an unknown, a malformed and a revoked API key
// with HTTP 401 and JSON-RPC -32000 naming the rule, before looking at the
// call; a live key gets through.
func TestOrderflowKeysOverHTTP(t *testing.T) {
	e := newOrderflowEdges(t)
	live, _, err := e.store.Issue(t.Context(), "0x00000000000000000000000000000000000000a1")
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := e.store.Issue(t.Context(), "0x00000000000000000000000000000000000000a2")
	if err != nil {
		t.Fatal(err)
	}
	// Revoke through the endpoint, as the key's owner does.
	req, _ := http.NewRequest(http.MethodPost, e.accounts.URL+"/v1/auth/api-keys/revoke", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+revoked)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	// The account endpoints refuse it as every 401 of the service is
	// answered: WWW-Authenticate and an X-Request-ID.
	req, _ = http.NewRequest(http.MethodGet, e.accounts.URL+"/v1/auth/account", nil)
	req.Header.Set("Authorization", "Bearer "+revoked)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" || resp.Header.Get("X-Request-ID") == "" {
		t.Fatalf("account with the revoked key: %d %v", resp.StatusCode, resp.Header)
	}
	unknown, _ := of.NewKey()
	cancel := map[string]any{"replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}
	badTx := "0x00"

	for _, ep := range []struct {
		name, url, method string
		param             any
	}{
		{"originator partner", e.originator.URL, "eth_sendRawTransaction", badTx},
		{"searcher", e.searcher.URL, "eth_cancelBundle", cancel},
	} {
		for _, k := range []struct{ name, key string }{{"unknown", unknown}, {"malformed", "ofk_nothex"}, {"revoked", revoked}} {
			t.Run(ep.name+"/"+k.name, func(t *testing.T) {
				r := callRPC(t, ep.url+"/v1/"+k.key, ep.method, ep.param, nil)
				if r.status != http.StatusUnauthorized || r.body.Error == nil || r.body.Error.Code != -32000 ||
					!strings.Contains(r.body.Error.Message, "unknown or revoked API key") || r.header.Get("X-Request-ID") == "" {
					t.Fatalf("%d %+v", r.status, r.body.Error)
				}
			})
		}
	}
	// The live key passes the key check: the bad transaction is what fails,
	// and cancelling a group never seen is accepted and changes nothing.
	if r := callRPC(t, e.originator.URL+"/v1/"+live, "eth_sendRawTransaction", badTx, nil); r.status != 200 || r.body.Error == nil || r.body.Error.Code != -32600 {
		t.Fatalf("live originator key: %d %+v", r.status, r.body.Error)
	}
	r := callRPC(t, e.searcher.URL+"/v1/"+live, "eth_cancelBundle", cancel, nil)
	if r.status != 200 || r.body.Error != nil || string(r.body.Result) != "null" {
		t.Fatalf("cancel of an unknown group: %d %s %+v", r.status, r.body.Result, r.body.Error)
	}
	// The searcher endpoint has no open form.
	if r := callRPC(t, e.searcher.URL+"/v1", "eth_cancelBundle", cancel, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("searcher without key: %d", r.status)
	}
}

// accountCall sends body (GET when empty) to an account path with key as
// bearer and returns the HTTP status and the envelope.
func (e *orderflowEdges) accountCall(t *testing.T, path, key, body string) (int, map[string]any) {
	t.Helper()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != "" {
		method, rd = http.MethodPost, strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.accounts.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, env
}

// TestVerifyRefusesAMalformedNonce: a nonce that is not a challenge's (16
// bytes of 0x hex) is a 400 naming the fields, not a Postgres error; a
// well-formed nonce that was never issued is the challenge's 401.
func TestVerifyRefusesAMalformedNonce(t *testing.T) {
	e := newOrderflowEdges(t)
	const addr = "0x00000000000000000000000000000000000000a1"
	sig := "0x" + strings.Repeat("11", 65)
	for _, tc := range []struct {
		nonce  string
		status int
	}{
		{`"\u0000"`, 400},
		{`"0x01"`, 400},
		{`"0x000102030405060708090a0b0c0d0e0f\u0000"`, 400},
		{`"` + strings.Repeat("a", 5000) + `"`, 400},
		{`"0x000102030405060708090a0b0c0d0e0f"`, 401},
	} {
		status, env := e.accountCall(t, "/v1/auth/verify", "", `{"address":"`+addr+`","nonce":`+tc.nonce+`,"signature":"`+sig+`"}`)
		if status != tc.status || (status == 400 && (env["code"] != float64(1001) || !strings.Contains(env["message"].(string), "nonce"))) {
			t.Errorf("nonce %.40s: %d %v, want %d", tc.nonce, status, env, tc.status)
		}
	}
}

// TestRefundReaderSubaccount: an originator offers another account the
// reading of its refunds; the offer changes nothing until that account
// accepts with its own key, and reading for a partner only adds the
// refund-read role: the reader keeps originating and searching. Either
// side can end it.
func TestRefundReaderSubaccount(t *testing.T) {
	e := newOrderflowEdges(t)
	const partner, reader = "0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b2"
	pkey, _, err := e.store.Issue(t.Context(), partner)
	if err != nil {
		t.Fatal(err)
	}
	rkey, _, err := e.store.Issue(t.Context(), reader)
	if err != nil {
		t.Fatal(err)
	}
	roles := func(key string) (string, string) {
		t.Helper()
		status, env := e.accountCall(t, "/v1/auth/account", key, "")
		data, _ := env["data"].(map[string]any)
		if status != 200 || data == nil {
			t.Fatalf("account: %d %v", status, env)
		}
		return fmt.Sprint(data["roles"]), fmt.Sprint(data["refundPartners"])
	}
	call := func(path, key, addr, field string, want bool) {
		t.Helper()
		status, env := e.accountCall(t, path, key, `{"address": "`+addr+`"}`)
		data, _ := env["data"].(map[string]any)
		if status != 200 || data[field] != want {
			t.Fatalf("%s (want %s %t): %d %v", path, field, want, status, env)
		}
	}
	call("/v1/auth/refund-partners/accept", rkey, partner, "accepted", false)
	call("/v1/auth/refund-readers", pkey, reader[:2]+strings.ToUpper(reader[2:]), "accepted", false)
	if r, p := roles(rkey); r != "[originator searcher]" || p != "[]" {
		t.Fatalf("roles of an account only offered the reading: %s, partners %s", r, p)
	}
	call("/v1/auth/refund-partners/accept", rkey, partner, "accepted", true)
	if r, p := roles(rkey); r != "[originator searcher refund-read]" || p != "["+partner+"]" {
		t.Fatalf("reader's roles %s, partners %s", r, p)
	}
	if r, _ := roles(pkey); r != "[originator searcher]" {
		t.Fatalf("partner's roles: %s", r)
	}
	if r := callRPC(t, e.originator.URL+"/v1/"+rkey, "eth_sendRawTransaction", "0x00", nil); r.status == http.StatusForbidden {
		t.Fatalf("reader refused as a partner originator: %+v", r.body.Error)
	}
	r := callRPC(t, e.searcher.URL+"/v1/"+rkey, "eth_cancelBundle", map[string]any{"replacementUuid": "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"}, nil)
	if r.status == http.StatusForbidden {
		t.Fatalf("reader refused as searcher: %+v", r.body.Error)
	}
	call("/v1/auth/refund-partners/remove", rkey, partner, "removed", true)
	if r, p := roles(rkey); r != "[originator searcher]" || p != "[]" {
		t.Fatalf("roles after the reader left: %s, partners %s", r, p)
	}
	call("/v1/auth/refund-readers", pkey, reader, "accepted", false)
	call("/v1/auth/refund-partners/accept", rkey, partner, "accepted", true)
	for _, want := range []bool{true, false} {
		call("/v1/auth/refund-readers/remove", pkey, reader, "removed", want)
	}
	if r, p := roles(rkey); r != "[originator searcher]" || p != "[]" {
		t.Fatalf("roles after removal %s, partners %s", r, p)
	}
}
