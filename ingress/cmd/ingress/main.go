// Command ingress serves the REST mutations and every other way an outside
// event enters the log. See docs/deploy.md and ingress.ConfigFromEnv for
// its environment variables.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/process"
)

func main() {
	os.Exit(process.Main("ingress", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	cfg := ingress.ConfigFromEnv(r)
	if cfg.Auth.SigningKey == nil {
		r.Fail("AUTH_SIGNING_KEY_FILE or AUTH_SIGNING_KEY is required: the PEM P-256 key that signs access tokens")
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	cfg.Environment = p.Common.Environment
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
	clockLoop, err := markets(p, cfg, svc)
	if err != nil {
		return nil, nil, err
	}
	if clockLoop != nil {
		loops = append(loops, clockLoop)
	}
	flowDeps := ingress.OrderflowDeps{Pool: p.Pool, Brokers: p.Common.KafkaBrokers, KafkaCompression: p.Common.KafkaCompression,
		Logger: p.Log, Registry: p.Registry}
	if cfg.Deposits.ChainRPCURL != "" {
		client, err := ethclient.DialContext(ctx, cfg.Deposits.ChainRPCURL)
		if err != nil {
			return nil, nil, fmt.Errorf("CHAIN_RPC_URL: %w", err)
		}
		w, err := ingress.DepositWatcher(cfg.Environment.ChainID, cfg.Deposits, client, deps)
		if err != nil {
			return nil, nil, err
		}
		loops = append(loops, w.Run)
		flowDeps.Chain = client
	}
	flow, err := ingress.NewOrderflow(cfg, flowDeps)
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
		{Addr: cfg.Addr, Handler: svc.Handler()},
		{Addr: cfg.Orderflow.OriginatorAddr, Handler: flow.OriginatorHandler()},
		{Addr: cfg.Orderflow.SearcherAddr, Handler: flow.SearcherHandler()},
		{Addr: cfg.Orderflow.AccountsAddr, Handler: flow.AccountsHandler()},
	}, loops, nil
}

// markets serves the validator routes and runs the slot clock when
// BEACON_URL names a beacon node (docs/markets.md); SLOT_CLOCK=false keeps
// an instance from publishing ticks.
func markets(p *process.Process, cfg ingress.Config, svc *ingress.Service) (func(context.Context) error, error) {
	m := cfg.Markets
	if m.BeaconURL == "" {
		p.Log.Warn("BEACON_URL is not set: no validator registration and no slot clock")
		return nil, nil
	}
	b, err := ingress.NewBeaconClient(m.BeaconURL, m.BeaconTimeout)
	if err != nil {
		return nil, fmt.Errorf("BEACON_URL: %w", err)
	}
	if err := svc.ServeValidators(p.Pool, b, p.DBErr, p.Log.With("component", "validators")); err != nil {
		return nil, err
	}
	if !m.SlotClock {
		return nil, nil
	}
	c, err := ingress.NewClock(cfg.Environment, m, p.Pool, b, p.Kafka, p.Log.With("component", "clock"))
	if err != nil {
		return nil, err
	}
	return c.Run, nil
}
