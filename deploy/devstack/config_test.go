package devstack

import (
	"testing"

	"blockspace.exchange/platform/config"
)

// CHAIN_ADDR set but empty keeps the dev chain in-process (no JSON-RPC
// listener); unset serves it on its default address.
func TestChainAddrEmptyMeansNotServed(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "127.0.0.1:8545"},
		{map[string]string{"CHAIN_ADDR": ""}, ""},
		{map[string]string{"CHAIN_ADDR": "127.0.0.1:0"}, "127.0.0.1:0"},
	} {
		cfg, err := ConfigFromEnv(config.FromMap(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ChainAddr != tc.want {
			t.Errorf("%v: ChainAddr %q, want %q", tc.env, cfg.ChainAddr, tc.want)
		}
	}
}
