package deploy

import "testing"

// TestComposeOrderflowRelayConfig: the relay's builders, chain, refund
// payer and searcher socket limits are configurable from the compose
// environment, with the values the operator sets passed through
// unchanged.
func TestComposeOrderflowRelayConfig(t *testing.T) {
	defaults := loadCompose(t, nil).service(t, "orderflow-relay").Environment
	for k, want := range map[string]string{"BUILDER_URLS": "", "BUILDER_BATCH": "1", "CHAIN_RPC_URL": "", "REFUND_PAYER_KEY": "", "REFUND_CONFIRMATIONS": "2",
		"SEARCHER_SOCKETS_PER_KEY": "8", "SEARCHER_SOCKETS_MAX": "4096"} {
		got, ok := defaults[k]
		if !ok || got != want {
			t.Errorf("orderflow-relay %s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	set := map[string]string{
		"BUILDER_URLS": "http://b1:8545,http://b2:8545", "BUILDER_BATCH": "50", "CHAIN_RPC_URL": "http://geth:8545",
		"REFUND_PAYER_KEY": "0x0123", "REFUND_CONFIRMATIONS": "6", "SEARCHER_SOCKETS_PER_KEY": "32", "SEARCHER_SOCKETS_MAX": "10000",
	}
	var env []string
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	got := loadCompose(t, env).service(t, "orderflow-relay").Environment
	for k, want := range set {
		if got[k] != want {
			t.Errorf("orderflow-relay %s = %q, want %q", k, got[k], want)
		}
	}
}
