package relay

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/platform/config"
)

// The variables replace the defaults they are read over, and a value out
// of range is reported with the variable's name.
func TestConfigFromEnv(t *testing.T) {
	r := config.FromMap(map[string]string{})
	cfg := ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":8082" || cfg.BuilderBatch != 1 || cfg.RefundConfirmations != 2 || cfg.ChainPoll != 250*time.Millisecond ||
		cfg.SocketsPerKey != 8 || cfg.MaxSockets != 4096 || cfg.PayerKey != nil || cfg.BuilderGroup != "orderflow-relay-builders" {
		t.Errorf("defaults: %+v", cfg)
	}
	base := DefaultConfig()
	base.BuilderBatch = 100
	r = config.FromMap(map[string]string{"REFUND_CONFIRMATIONS": "0", "BUILDER_URLS": "http://a, http://b", "ORDERFLOW_RELAY_GROUP": "relay-b"})
	cfg = base.FromEnv(r)
	if err := r.Err(); err != nil || cfg.BuilderBatch != 100 || cfg.RefundConfirmations != 0 || len(cfg.BuilderURLs) != 2 || cfg.BuilderGroup != "relay-b" {
		t.Errorf("over a base: %+v, %v", cfg, err)
	}
	for _, name := range []string{"BUILDER_BATCH", "REFUND_PAYER_KEY", "SEARCHER_SOCKETS_MAX"} {
		r := config.FromMap(map[string]string{name: "0x"})
		ConfigFromEnv(r)
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=0x: error %v, want one naming it", name, err)
		}
	}
}
