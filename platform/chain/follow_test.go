package chain_test

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/config"
)

// The confirmations and poll interval take the shared defaults, each
// variable in its range replaces its default, and one out of range is
// named.
func TestFollowFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want chain.Follow
		bad  string
	}{
		{"defaults", nil, chain.Follow{Confirmations: 12, Poll: 2 * time.Second}, ""},
		{"set", map[string]string{"CHAIN_CONFIRMATIONS": "0", "CHAIN_POLL": "100ms"}, chain.Follow{Confirmations: 0, Poll: 100 * time.Millisecond}, ""},
		{"too many confirmations", map[string]string{"CHAIN_CONFIRMATIONS": "10001"}, chain.Follow{}, "CHAIN_CONFIRMATIONS"},
		{"poll too short", map[string]string{"CHAIN_POLL": "50ms"}, chain.Follow{}, "CHAIN_POLL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := config.FromMap(tc.env)
			got := chain.FollowFromEnv(r)
			err := r.Err()
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("error %v, want one naming %s", err, tc.bad)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// COLLATERAL_CONTRACT must be an address; anything else is named.
func TestContractFromEnv(t *testing.T) {
	r := config.FromMap(map[string]string{"COLLATERAL_CONTRACT": "0x" + strings.Repeat("ab", 20)})
	if got := chain.ContractFromEnv(r); r.Err() != nil || !strings.EqualFold(got.Hex(), "0x"+strings.Repeat("ab", 20)) {
		t.Fatalf("%s, %v", got.Hex(), r.Err())
	}
	for _, v := range []string{"", "nope", "0x1234"} {
		r := config.FromMap(map[string]string{"COLLATERAL_CONTRACT": v})
		chain.ContractFromEnv(r)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), "COLLATERAL_CONTRACT") {
			t.Errorf("COLLATERAL_CONTRACT=%q: error %v, want one naming it", v, err)
		}
	}
}
