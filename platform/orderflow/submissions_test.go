package orderflow

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/metricstest"
)

// TestOutcome classifies the answers the orderflow endpoints give.
func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, OutcomeAccepted},
		{"bad transaction", RPCError(&TxError{}), OutcomeInvalid},
		{"bad parameter", RPCError(paramErr("x")), OutcomeInvalid},
		{"unknown method", jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no"), OutcomeInvalid},
		{"rule without status", jsonrpc.Errorf(jsonrpc.CodeRule, "nonce too far ahead"), OutcomeInvalid},
		{"rate limit", &jsonrpc.Error{Code: jsonrpc.CodeRule, HTTPStatus: http.StatusTooManyRequests}, OutcomeRefused},
		{"unknown key", &jsonrpc.Error{Code: jsonrpc.CodeRule, HTTPStatus: http.StatusUnauthorized}, OutcomeRefused},
		{"no role", &jsonrpc.Error{Code: jsonrpc.CodeRule, HTTPStatus: http.StatusForbidden}, OutcomeRefused},
		{"log unavailable", Unavailable(errors.New("broker down")), OutcomeError},
		{"internal", jsonrpc.Errorf(jsonrpc.CodeInternal, "bug"), OutcomeError},
		{"not a JSON-RPC error", errors.New("bug"), OutcomeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outcome(tc.err); got != tc.want {
				t.Fatalf("Outcome = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSearcherCallsCounted: every call SearcherMethods answers is counted
// under its method (unknown ones as "other") and outcome.
func TestSearcherCallsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	subs, err := NewSubmissions(reg)
	if err != nil {
		t.Fatal(err)
	}
	m := SearcherMethods{Rules: testRules(), Producer: refusing{}, Submissions: subs}
	searcher := Identity{Address: "0x00000000000000000000000000000000000000c1", Roles: []string{RoleSearcher}}
	originator := Identity{Address: "0x00000000000000000000000000000000000000c2", Roles: []string{RoleOriginator}}
	bundle, _ := json.Marshal(map[string]any{"txs": []string{sign(t, testChain, dynamicTx(1))}})
	for _, c := range []struct {
		who    Identity
		method string
		param  json.RawMessage
	}{
		{searcher, MethodSendBundle, bundle},                       // the log refuses it: error
		{searcher, MethodSendBundle, json.RawMessage(`{"txs":1}`)}, // invalid
		{originator, MethodSendBundle, bundle},                     // no searcher role: refused
		{searcher, "eth_sendEverything", bundle},                   // other, invalid
	} {
		_, _ = m.Call(t.Context(), c.who, jsonrpc.Request{ID: json.RawMessage("1"), Method: c.method, Param: c.param})
	}
	for _, c := range []struct {
		method, outcome string
		want            float64
	}{
		{MethodSendBundle, OutcomeError, 1},
		{MethodSendBundle, OutcomeInvalid, 1},
		{MethodSendBundle, OutcomeRefused, 1},
		{MethodSendBundle, OutcomeAccepted, 0},
		{"other", OutcomeInvalid, 1},
	} {
		if got := metricstest.Value(t, reg, "orderflow_submissions_total", "method", c.method, "outcome", c.outcome); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.outcome, got, c.want)
		}
	}
}
