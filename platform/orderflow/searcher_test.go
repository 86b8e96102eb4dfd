package orderflow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/jsonrpc"
)

// refusing is a log that acknowledges nothing.
type refusing struct{}

func (refusing) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	return kgo.ProduceResults{{Record: rs[0], Err: kgo.ErrRecordTimeout}}
}

// TestSearcherPublishFailureIsUnavailable: a bundle, a cancelling empty
// bundle and eth_cancelBundle whose publish the log did not acknowledge
// are answered -32000 with HTTP 503, as an originator's submission is:
// nothing was accepted and the searcher may send it again.
func TestSearcherPublishFailureIsUnavailable(t *testing.T) {
	m := SearcherMethods{Rules: testRules(), Producer: refusing{}}
	who := Identity{Address: "0x00000000000000000000000000000000000000c1", Roles: []string{RoleOriginator, RoleSearcher}}
	const group = "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"
	raw := sign(t, testChain, dynamicTx(1))
	for _, tc := range []struct {
		name, method string
		param        any
	}{
		{"bundle", MethodSendBundle, map[string]any{"txs": []string{raw}}},
		{"cancel by an empty bundle", MethodSendBundle, map[string]any{"txs": []string{}, "replacementUuid": group}},
		{"eth_cancelBundle", MethodCancelBundle, map[string]any{"replacementUuid": group}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			param, _ := json.Marshal(tc.param)
			_, err := m.Call(t.Context(), who, jsonrpc.Request{ID: json.RawMessage("1"), Method: tc.method, Param: param})
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Code != jsonrpc.CodeRule || e.HTTPStatus != http.StatusServiceUnavailable {
				t.Fatalf("error %v, want -32000 with HTTP 503", err)
			}
		})
	}
}
