package devstack

import (
	"strings"
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

// DEMO_VALIDATOR takes the booleans every other switch takes, and a value
// that is none of them stops the start instead of leaving the validator on.
func TestDemoValidatorIsABool(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
		bad   bool
	}{
		{"", true, false},
		{"true", true, false},
		{"false", false, false},
		{"0", false, false},
		{"no", false, false},
		{"off", false, false},
		{"flase", true, true},
	} {
		cfg, err := ConfigFromEnv(config.FromMap(map[string]string{"DEMO_VALIDATOR": tc.value}))
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "DEMO_VALIDATOR") {
				t.Errorf("DEMO_VALIDATOR=%q: error %v, want one naming DEMO_VALIDATOR", tc.value, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("DEMO_VALIDATOR=%q: %v", tc.value, err)
		} else if cfg.DemoValidator != tc.want {
			t.Errorf("DEMO_VALIDATOR=%q: DemoValidator %v, want %v", tc.value, cfg.DemoValidator, tc.want)
		}
	}
}
