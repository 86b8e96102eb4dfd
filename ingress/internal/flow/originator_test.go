package flow

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

var testChain = big.NewInt(1337)

// acks acknowledges every record and counts them; the admission rules
// under test decide before anything is published.
type acks struct {
	mu sync.Mutex
	n  int
}

func (a *acks) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n += len(rs)
	out := make(kgo.ProduceResults, len(rs))
	for i, r := range rs {
		out[i] = kgo.ProduceResult{Record: r}
	}
	return out
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// originatorServer serves the open endpoint with cfg's limits.
func originatorServer(t *testing.T, cfg Config) (*httptest.Server, *acks) {
	t.Helper()
	cfg.ChainID, cfg.Rules, cfg.DefaultRefundPercent = testChain, of.Rules{ChainID: testChain}, 90
	p := &acks{}
	o := NewOriginators(cfg, nil, p, NewSeen(10*time.Minute))
	srv := httptest.NewServer(jsonrpc.Handler(jsonrpc.Config{Service: "originator",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxInFlight: 16}, o.Call))
	t.Cleanup(srv.Close)
	return srv, p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signedTx(t *testing.T, key *ecdsa.PrivateKey, nonce uint64) string {
	t.Helper()
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(testChain), &types.DynamicFeeTx{
		ChainID: testChain, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: big.NewInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(b)
}

type answer struct {
	status     int
	retryAfter string
	code       int
	message    string
}

func post(t *testing.T, url, method string, param any, header http.Header) answer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": []any{param}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/v1", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if out.Error != nil {
		a.code, a.message = out.Error.Code, out.Error.Message
	}
	return a
}

// assertLimited checks the answer over a limit: -32000, HTTP 429 and a
// Retry-After of whole seconds, at least 1.
func assertLimited(t *testing.T, a answer, reason string) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || a.code != jsonrpc.CodeRule || !strings.Contains(a.message, reason) {
		t.Fatalf("answer %+v, want HTTP 429 with -32000 %q", a, reason)
	}
	if s, err := strconv.Atoi(a.retryAfter); err != nil || s < 1 {
		t.Fatalf("Retry-After %q, want whole seconds >= 1", a.retryAfter)
	}
}

func assertAccepted(t *testing.T, a answer) {
	t.Helper()
	if a.status != http.StatusOK || a.code != 0 {
		t.Fatalf("answer %+v, want a result", a)
	}
}

// TestOriginatorLimitPerClientIP: a client address gets its burst of
// submissions, then 429 with Retry-After, whatever the senders; another
// client address (as the trusted gateway's header names it) is not held
// back.
func TestOriginatorLimitPerClientIP(t *testing.T) {
	srv, published := originatorServer(t, Config{RatePerIP: ratelimit.Rate{PerMinute: 1, Burst: 2}, ClientIPHeader: "X-Real-IP"})
	from := http.Header{"X-Real-Ip": {"198.51.100.7"}}
	for i := range 2 {
		assertAccepted(t, post(t, srv.URL, MethodSendPrivateRawTransaction, signedTx(t, newKey(t), uint64(i)), from))
	}
	assertLimited(t, post(t, srv.URL, MethodSendPrivateTransaction, map[string]any{"tx": signedTx(t, newKey(t), 0)}, from),
		"too many submissions from this client address")
	assertLimited(t, post(t, srv.URL, of.MethodSendBundle, map[string]any{"txs": []string{signedTx(t, newKey(t), 0)}}, from),
		"too many submissions from this client address")
	if n := published.count(); n != 2 {
		t.Fatalf("%d records published, want the 2 admitted", n)
	}
	assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, signedTx(t, newKey(t), 0), http.Header{"X-Real-Ip": {"198.51.100.8"}}))
}

// TestOriginatorLimitPerSender: one signing address gets its burst of
// submissions from any number of client addresses, then 429 with
// Retry-After, for single transactions and bundles alike; other senders
// are not held back, and a bundle refused for one sender takes no token
// of the others.
func TestOriginatorLimitPerSender(t *testing.T) {
	srv, published := originatorServer(t, Config{RatePerSender: ratelimit.Rate{PerMinute: 1, Burst: 2}, ClientIPHeader: "X-Real-IP"})
	flooder, other := newKey(t), newKey(t)
	ip := func(i int) http.Header { return http.Header{"X-Real-Ip": {fmt.Sprintf("198.51.100.%d", i)}} }
	assertAccepted(t, post(t, srv.URL, MethodSendPrivateRawTransaction, signedTx(t, flooder, 0), ip(1)))
	assertAccepted(t, post(t, srv.URL, of.MethodSendBundle, map[string]any{"txs": []string{signedTx(t, flooder, 1)}}, ip(2)))
	want := "too many submissions from sender " + strings.ToLower(crypto.PubkeyToAddress(flooder.PublicKey).Hex())
	assertLimited(t, post(t, srv.URL, MethodSendPrivateRawTransaction, signedTx(t, flooder, 2), ip(3)), want)
	assertLimited(t, post(t, srv.URL, of.MethodSendBundle,
		map[string]any{"txs": []string{signedTx(t, other, 0), signedTx(t, flooder, 3)}}, ip(4)), want)
	for i := range 2 {
		assertAccepted(t, post(t, srv.URL, MethodSendRawTransaction, signedTx(t, other, uint64(i)), ip(5)))
	}
	if n := published.count(); n != 4 {
		t.Fatalf("%d records published, want the 4 admitted", n)
	}
}
