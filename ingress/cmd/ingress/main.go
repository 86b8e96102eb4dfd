// Command ingress serves the REST mutations and every other way an outside
// event enters the log. See docs/deploy.md for its environment variables.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/internal/deposits"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("ingress", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := ingress.Config{
		Environment: p.Common.Environment, MaxInFlight: httpx.MaxInFlightFromEnv(r),
		Auth:   ingress.AuthConfigFromEnv(r),
		Orders: ingress.OrderEntryConfigFromEnv(r),
		Outbox: ingress.OutboxConfigFromEnv(r),
	}
	if cfg.Auth.SigningKey == nil {
		r.Fail("AUTH_SIGNING_KEY_FILE or AUTH_SIGNING_KEY is required: the PEM P-256 key that signs access tokens")
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	addr := r.String("HTTP_ADDR", ":8080")
	metrics, err := httpx.NewMetrics(p.Registry, "ingress")
	if err != nil {
		return nil, nil, err
	}
	outboxMetrics := outbox.NewMetrics(p.Pool)
	if err := p.Registry.Register(outboxMetrics); err != nil {
		return nil, nil, err
	}
	deps := ingress.Deps{
		Pool: p.Pool, Logger: p.Log, Metrics: metrics, DBErr: p.DBErr,
		Kafka: p.Kafka, KafkaErr: func() error { return p.Monitor.Err("kafka") }, Registry: p.Registry,
		OutboxMetrics: outboxMetrics,
	}
	svc, err := ingress.New(ctx, cfg, deps)
	if err != nil {
		return nil, nil, err
	}
	if err := svc.RegisterMetrics(p.Registry); err != nil {
		return nil, nil, err
	}
	loops := []func(context.Context) error{svc.Run}
	clockLoop, err := markets(p, r, svc)
	if err != nil {
		return nil, nil, err
	}
	if clockLoop != nil {
		loops = append(loops, clockLoop)
	}
	var chain *ethclient.Client
	if rpcURL := r.String("CHAIN_RPC_URL", ""); rpcURL != "" {
		contract := r.String("COLLATERAL_CONTRACT", "")
		if !common.IsHexAddress(contract) {
			return nil, nil, fmt.Errorf("COLLATERAL_CONTRACT must be the 0x address of the collateral contract when CHAIN_RPC_URL is set, got %q", contract)
		}
		client, err := ethclient.DialContext(ctx, rpcURL)
		if err != nil {
			return nil, nil, fmt.Errorf("CHAIN_RPC_URL: %w", err)
		}
		chain = client
		w, err := ingress.DepositWatcher(deposits.Config{
			ChainID: p.Common.Environment.ChainID, Contract: common.HexToAddress(contract),
			Confirmations: uint64(r.Int("CHAIN_CONFIRMATIONS", 12, 0, 10_000)),
			StartBlock:    uint64(r.Int("CHAIN_START_BLOCK", 0, 0, 1<<62)),
			Poll:          r.Duration("CHAIN_POLL", 2*time.Second, 100*time.Millisecond, time.Minute),
		}, client, deps)
		if err != nil {
			return nil, nil, err
		}
		loops = append(loops, w.Run)
	}
	flowDeps := ingress.OrderflowDeps{Pool: p.Pool, Brokers: p.Common.KafkaBrokers, KafkaCompression: p.Common.KafkaCompression,
		Logger: p.Log, Registry: p.Registry}
	if chain != nil {
		flowDeps.Chain = chain
	}
	flow, err := ingress.NewOrderflow(ingress.OrderflowConfigFromEnv(r, p.Common.Environment), flowDeps)
	if err != nil {
		return nil, nil, err
	}
	loops = append(loops, flow.Run, func(ctx context.Context) error {
		<-ctx.Done()
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		flow.Close(fctx)
		return nil
	})
	return []process.Server{
		{Addr: addr, Handler: svc.Handler()},
		{Addr: r.String("ORIGINATOR_ADDR", ":8081"), Handler: flow.OriginatorHandler()},
		{Addr: r.String("SEARCHER_ADDR", ":8082"), Handler: flow.SearcherHandler()},
		{Addr: r.String("ORDERFLOW_ADDR", ":8083"), Handler: flow.AccountsHandler()},
	}, loops, nil
}

// markets serves the validator routes and runs the slot clock when
// BEACON_URL names a beacon node (docs/markets.md). SLOT_CLOCK=false keeps
// an instance from publishing ticks; two clocks may run at once.
func markets(p *process.Process, r *config.Reader, svc *ingress.Service) (func(context.Context) error, error) {
	url := r.String("BEACON_URL", "")
	if url == "" {
		p.Log.Warn("BEACON_URL is not set: no validator registration and no slot clock")
		return nil, nil
	}
	b, err := ingress.NewBeaconClient(url, r.Duration("BEACON_TIMEOUT", 5*time.Second, 100*time.Millisecond, time.Minute))
	if err != nil {
		return nil, fmt.Errorf("BEACON_URL: %w", err)
	}
	params := ingress.MarketParamsFromEnv(r)
	clock := slotClock(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := svc.ServeValidators(p.Pool, b, p.DBErr, p.Log.With("component", "validators")); err != nil {
		return nil, err
	}
	if !clock {
		return nil, nil
	}
	c, err := ingress.NewClock(p.Common.Environment, params, p.Pool, b, p.Kafka, p.Log.With("component", "clock"))
	if err != nil {
		return nil, err
	}
	return c.Run, nil
}

// slotClock reads SLOT_CLOCK (true): false, like 0, no or off, keeps this
// instance from publishing ticks; any other word is a configuration error.
func slotClock(r *config.Reader) bool { return r.Bool("SLOT_CLOCK", true) }
