package settler_test

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/settler"
)

// Without CHAIN_RPC_URL nothing else of the executor is required; with it
// the contract and the operator key are, each named when wrong.
func TestWithdrawalConfigFromEnv(t *testing.T) {
	r := config.FromMap(map[string]string{})
	w := settler.WithdrawalConfigFromEnv(r)
	if err := r.Err(); err != nil || w.ChainRPCURL != "" || w.Confirmations != 12 || w.Poll != 2*time.Second {
		t.Errorf("defaults: %+v, %v", w, err)
	}
	r = config.FromMap(map[string]string{"CHAIN_RPC_URL": "http://node:8545", "COLLATERAL_CONTRACT": "nope", "WITHDRAW_OPERATOR_KEY": "zz"})
	settler.WithdrawalConfigFromEnv(r)
	err := r.Err()
	for _, name := range []string{"COLLATERAL_CONTRACT", "WITHDRAW_OPERATOR_KEY"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v, want one naming %s", err, name)
		}
	}
	key := strings.Repeat("11", 32)
	r = config.FromMap(map[string]string{"CHAIN_RPC_URL": "http://node:8545", "COLLATERAL_CONTRACT": "0x" + strings.Repeat("ab", 20),
		"WITHDRAW_OPERATOR_KEY": "0x" + key, "CHAIN_CONFIRMATIONS": "3"})
	w = settler.WithdrawalConfigFromEnv(r)
	if err := r.Err(); err != nil || w.OperatorKey == nil || w.Confirmations != 3 || w.Contract.Hex() == "0x0000000000000000000000000000000000000000" {
		t.Errorf("set: %+v, %v", w, err)
	}
}
