package ingress_test

import (
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// TestOriginatorAdmission: the open endpoint, built from its config with
// a chain (go-ethereum's simulated chain, chain id 1337 as the dev chain
// runs it), refuses a wallet holding nothing, accepts a funded one up to
// its sender's burst and then answers 429 with Retry-After; only the
// accepted transactions reach the log.
func TestOriginatorAdmission(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	cl, brokers := kafkatest.Start(t)
	env, err := environment.Lookup("dev")
	if err != nil {
		t.Fatal(err)
	}
	rich, poor := newWallet(t), newWallet(t)
	sim := simulated.NewBackend(types.GenesisAlloc{common.HexToAddress(rich.addr): {Balance: big.NewInt(1e18)}})
	t.Cleanup(func() { _ = sim.Close() })
	o, err := ingress.NewOrderflow(ingress.Config{Environment: env, MaxInFlight: 64, Auth: ingress.AuthConfig{Product: "Test"},
		Orderflow: ingress.OrderflowConfig{DefaultRefundPercent: 90, SubmitRatePerSender: ingress.Rate{PerMinute: 1, Burst: 2}}},
		ingress.OrderflowDeps{Pool: pool, Brokers: brokers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Registry: prometheus.NewRegistry(), Chain: sim.Client()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(o.OriginatorHandler())
	t.Cleanup(func() { srv.Close(); o.Close(t.Context()) })
	url := srv.URL + "/v1"

	raw, _ := poor.tx(t, devChain, 0)
	wantRefusal(t, callRPC(t, url, "eth_sendPrivateRawTransaction", raw, nil), http.StatusOK, jsonrpc.CodeInvalidRequest, "sender "+poor.addr+" has 0 wei")
	for n := range uint64(2) {
		raw, _ := rich.tx(t, devChain, n)
		wantResult(t, callRPC(t, url, "eth_sendRawTransaction", raw, nil))
	}
	raw, _ = rich.tx(t, devChain, 2)
	r := callRPC(t, url, "eth_sendRawTransaction", raw, nil)
	wantRefusal(t, r, http.StatusTooManyRequests, jsonrpc.CodeRule, "too many submissions from sender "+rich.addr)
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q, want whole seconds >= 1", r.header.Get("Retry-After"))
	}
	if got := kafkatest.ReadToEnd(t.Context(), t, cl, topics.OrderflowTxs); len(got) != 2 {
		t.Fatalf("%d transactions published, want the 2 accepted", len(got))
	}
}
