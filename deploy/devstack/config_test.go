package devstack

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/config"
)

// CHAIN_ADDR set but empty keeps the dev chain in-process (no JSON-RPC
// listener); unset serves it on its default address.
func TestChainAddrEmptyMeansNotServed(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// DEV_BLOCK_INTERVAL is 0 in any spelling (no automatic blocks) or 50ms to
// 1m; the refusal says that 0 is allowed too.
func TestDevBlockInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  time.Duration
		bad   bool
	}{
		{"", 2 * time.Second, false},
		{"0", 0, false},
		{"0s", 0, false},
		{"0ms", 0, false},
		{"500ms", 500 * time.Millisecond, false},
		{"1m", time.Minute, false},
		{"10ms", 0, true},
		{"2m", 0, true},
		{"2", 0, true},
		{"-1s", 0, true},
	} {
		cfg, err := ConfigFromEnv(config.FromMap(map[string]string{"DEV_BLOCK_INTERVAL": tc.value}))
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), "DEV_BLOCK_INTERVAL") || !strings.Contains(err.Error(), "want 0") {
				t.Errorf("DEV_BLOCK_INTERVAL=%q: error %v, want one naming the variable and allowing 0", tc.value, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("DEV_BLOCK_INTERVAL=%q: %v", tc.value, err)
		} else if cfg.DevBlockInterval != tc.want {
			t.Errorf("DEV_BLOCK_INTERVAL=%q: %s, want %s", tc.value, cfg.DevBlockInterval, tc.want)
		}
	}
}

// SEARCHER_SOCKETS_PER_KEY and SEARCHER_SOCKETS_MAX default to 8 and
// 4096, as in the relay binary; a value out of range stops the start
// with a message naming the variable.
func TestSearcherSocketLimits(t *testing.T) {
	t.Parallel()
	cfg, err := ConfigFromEnv(config.FromMap(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Relay.SocketsPerKey != 8 || cfg.Relay.MaxSockets != 4096 {
		t.Errorf("defaults: %d per key, %d in all; want 8 and 4096", cfg.Relay.SocketsPerKey, cfg.Relay.MaxSockets)
	}
	cfg, err = ConfigFromEnv(config.FromMap(map[string]string{"SEARCHER_SOCKETS_PER_KEY": "1000", "SEARCHER_SOCKETS_MAX": "2000"}))
	if err != nil || cfg.Relay.SocketsPerKey != 1000 || cfg.Relay.MaxSockets != 2000 {
		t.Errorf("set: %d per key, %d in all, %v; want 1000 and 2000", cfg.Relay.SocketsPerKey, cfg.Relay.MaxSockets, err)
	}
	for _, name := range []string{"SEARCHER_SOCKETS_PER_KEY", "SEARCHER_SOCKETS_MAX"} {
		if _, err := ConfigFromEnv(config.FromMap(map[string]string{name: "0"})); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=0: error %v, want one naming it", name, err)
		}
	}
}
