package devstack

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"blockspace.exchange/platform/config"
)

// A listener address another program holds stops the stack before it
// starts anything, with one line that names the variable to change: no
// panic, no broker or chain error in their own words.
func TestTakenAddressNamesItsVariable(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, variable := range []string{"HTTP_ADDR", "ADMIN_ADDR", "KAFKA_ADDR", "ORIGINATOR_ADDR", "SEARCHER_ADDR", "ORDERFLOW_ADDR", "DEV_BUILDER_ADDR", "CHAIN_ADDR"} {
		t.Run(variable, func(t *testing.T) {
			vars := map[string]string{
				"DATA_DIR": t.TempDir(), "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "KAFKA_ADDR": "127.0.0.1:0",
				"ORIGINATOR_ADDR": "127.0.0.1:0", "SEARCHER_ADDR": "127.0.0.1:0", "ORDERFLOW_ADDR": "127.0.0.1:0",
				"DEV_BUILDER_ADDR": "127.0.0.1:0", "CHAIN_ADDR": "127.0.0.1:0",
			}
			vars[variable] = addr
			cfg, err := ConfigFromEnv(config.FromMap(vars))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				s.stopDependencies()
				t.Fatalf("the stack started with %s=%s taken", variable, addr)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, variable+"="+addr+" is taken") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line beginning %s=%s is taken", msg, variable, addr)
			}
		})
	}
}

// With an external broker the stack opens no KAFKA_ADDR, and with
// CHAIN_ADDR empty it serves no chain: neither is checked.
func TestUnusedAddressesAreNotChecked(t *testing.T) {
	t.Parallel()
	cfg := Config{RESTAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", OriginatorAddr: "127.0.0.1:0", SearcherAddr: "127.0.0.1:0",
		OrderflowAddr: "127.0.0.1:0", DevBuilderAddr: "127.0.0.1:0", KafkaAddr: "127.0.0.1:9092", KafkaBrokers: []string{"kafka:9092"}}
	if got := fixedAddresses(cfg); len(got) != 0 {
		t.Fatalf("fixed addresses %v, want none", got)
	}
	cfg.KafkaBrokers, cfg.ChainAddr = nil, "127.0.0.1:8545"
	if got := fixedAddresses(cfg); len(got) != 2 || got[0].variable != "KAFKA_ADDR" || got[1].variable != "CHAIN_ADDR" {
		t.Fatalf("fixed addresses %v, want KAFKA_ADDR and CHAIN_ADDR", got)
	}
}
