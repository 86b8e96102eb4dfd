// Command orderflow-relay serves the searcher WebSocket, forwards bundles
// to builders and follows the chain for inclusion and refunds. See
// docs/deploy.md and docs/orderflow.md for its environment variables.
package main

import (
	"context"
	"math/big"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("orderflow-relay", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := relay.Config{
		ChainID:     big.NewInt(p.Common.Environment.ChainID),
		BuilderURLs: r.List("BUILDER_URLS"),
		KeyTTL:      r.Duration("ORDERFLOW_KEY_TTL", 500*time.Millisecond, 10*time.Millisecond, time.Second),
		Stream: relay.StreamConfig{
			SocketsPerKey: r.Int("SEARCHER_SOCKETS_PER_KEY", 8, 1, 1<<16),
			MaxSockets:    r.Int("SEARCHER_SOCKETS_MAX", 4096, 1, 1<<20),
		},
		Forward: relay.ForwardConfig{
			Batch:       r.Int("BUILDER_BATCH", 1, 1, 1000),
			BackrunWait: r.Duration("BACKRUN_WAIT", 10*time.Second, 100*time.Millisecond, 5*time.Minute),
			RetryFor:    r.Duration("BUILDER_RETRY", 24*time.Second, 100*time.Millisecond, 5*time.Minute),
		},
		ChainPoll:           r.Duration("CHAIN_POLL", 250*time.Millisecond, 10*time.Millisecond, time.Minute),
		RefundConfirmations: uint64(r.Int("REFUND_CONFIRMATIONS", 2, 0, 1000)),
	}
	if k := r.String("REFUND_PAYER_KEY", ""); k != "" {
		key, err := crypto.HexToECDSA(trim0x(k))
		if err != nil {
			r.Fail("REFUND_PAYER_KEY: not a hex secp256k1 private key")
		}
		cfg.PayerKey = key
	}
	outboxMetrics := outbox.NewMetrics(p.Pool)
	if err := p.Registry.Register(outboxMetrics); err != nil {
		return nil, nil, err
	}
	deps := relay.Deps{Pool: p.Pool, Brokers: p.Common.KafkaBrokers, KafkaCompression: p.Common.KafkaCompression, Logger: p.Log,
		OutboxMetrics: outboxMetrics, Registry: p.Registry}
	if u := r.String("CHAIN_RPC_URL", ""); u != "" {
		cl, err := ethclient.DialContext(ctx, u)
		if err != nil {
			r.Fail("CHAIN_RPC_URL: %v", err)
		} else {
			deps.Chain = cl
		}
	}
	addr := r.String("SEARCHER_WS_ADDR", ":8082")
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	svc, err := relay.New(ctx, cfg, deps)
	if err != nil {
		return nil, nil, err
	}
	if err := svc.RegisterMetrics(p.Registry); err != nil {
		svc.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error { defer svc.Close(); return svc.Run(ctx) }
	return []process.Server{{Addr: addr, Handler: svc.Handler()}}, []func(context.Context) error{run}, nil
}

func trim0x(s string) string {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		return s[2:]
	}
	return s
}
