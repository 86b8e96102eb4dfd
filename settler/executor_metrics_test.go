package settler_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"blockspace.exchange/platform/metricstest"
	"blockspace.exchange/settler"
)

// TestExecutorMetrics pays one withdrawal and fails another on chain,
// and reads the open requests, their age, the published outcomes and the
// executor's view of the chain back from the registry.
func TestExecutorMetrics(t *testing.T) {
	pool, cl, acc, chain := withdrawalFixture(t)
	paid := debitedRequest(t, pool, cl, acc, "1.25")
	reverted := debitedRequest(t, pool, cl, acc, "50") // the contract holds 3 ETH
	reg := prometheus.NewRegistry()
	e, err := settler.NewExecutor(settler.WithdrawalConfig{ChainID: 1337, Contract: chain.contract, OperatorKey: chain.operator,
		Confirmations: 2}, chain.sim.Client(), pool, cl, quiet, reg)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, reg, name, labels...) }

	if err := e.Step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := value("withdrawals_open", "status", "debited"); n != 2 {
		t.Fatalf("withdrawals_open{debited} = %v at the first round, want 2", n)
	}
	if age := value("withdrawals_oldest_unconfirmed_age_seconds"); age <= 0 {
		t.Fatalf("oldest unconfirmed age %v with two open requests", age)
	}
	if n := value("withdrawals_total", "state", "submitted"); n != 2 {
		t.Fatalf("withdrawals_total{submitted} = %v after the first round, want 2", n)
	}
	runUntil(t, chain, pool, e, map[int64]int{paid: 10, reverted: 104})
	if err := e.Step(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, f := value("withdrawals_total", "state", "confirmed"), value("withdrawals_total", "state", "failed"); c != 1 || f != 1 {
		t.Fatalf("%v confirmed, %v failed; want 1 and 1", c, f)
	}
	for _, status := range []string{"debited", "submitted"} {
		if n := value("withdrawals_open", "status", status); n != 0 {
			t.Fatalf("withdrawals_open{%s} = %v with every request final", status, n)
		}
	}
	if age := value("withdrawals_oldest_unconfirmed_age_seconds"); age != 0 {
		t.Fatalf("oldest unconfirmed age %v with none open", age)
	}
	head, err := chain.sim.Client().BlockNumber(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := value("chain_head_block", "watcher", "withdrawals"); n != float64(head) {
		t.Fatalf("chain_head_block = %v, want %d", n, head)
	}
	if n := value("chain_processed_block", "watcher", "withdrawals"); n != float64(head-2) {
		t.Fatalf("chain_processed_block = %v, want head - confirmations = %d", n, head-2)
	}
	if n := value("chain_watcher_polls_total", "watcher", "withdrawals", "outcome", "ok"); n < 2 {
		t.Fatalf("%v ok polls", n)
	}
}
