// Command settler owns the ledger and its schema. `settler -migrate`
// applies the schema's migrations and exits (the migrate step of
// docker-compose); without it the settler applies them at start and then
// applies ledger commands and funding events until stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/postgres"
	"blockspace.exchange/platform/process"
	"blockspace.exchange/settler"
	"blockspace.exchange/settler/schema"
)

var migrateOnly = flag.Bool("migrate", false, "apply the schema migrations and exit")

func main() {
	os.Exit(process.Main("settler", process.Needs{Postgres: true, Kafka: true}, build))
}

func build(ctx context.Context, p *process.Process, r *config.Reader) ([]process.Server, []func(context.Context) error, error) {
	applied, err := postgres.Migrate(ctx, p.Pool, schema.Migrations())
	if err != nil {
		return nil, nil, err
	}
	p.Log.Info("migrations applied", "new", applied)
	if *migrateOnly {
		fmt.Fprintf(os.Stdout, "applied %d new migrations\n", len(applied))
		return nil, nil, process.ErrFinished
	}
	cfg := settler.Config{
		Brokers:          p.Common.KafkaBrokers,
		KafkaCompression: p.Common.KafkaCompression,
		Group:            r.String("SETTLER_GROUP", settler.DefaultGroup),
		MaxBatch:         r.Int("SETTLER_MAX_BATCH", settler.DefaultMaxBatch, 1, 100_000),
		// Static group membership: opt-in, as it suits instances with
		// stable ids (a StatefulSet).
		InstanceID: r.StringOrEmpty("SETTLER_INSTANCE_ID", ""),
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	s, err := settler.New(ctx, cfg, p.Pool, p.Log)
	if err != nil {
		return nil, nil, err
	}
	if err := s.RegisterMetrics(p.Registry); err != nil {
		s.Close()
		return nil, nil, err
	}
	run := func(ctx context.Context) error {
		defer s.Close()
		return s.Run(ctx)
	}
	loops := []func(context.Context) error{run}
	if exec, err := withdrawalExecutor(ctx, p, r); err != nil {
		return nil, nil, err
	} else if exec != nil {
		loops = append(loops, exec.Run)
	}
	return nil, loops, nil
}

// withdrawalExecutor pays withdrawals when CHAIN_RPC_URL is set; it then
// needs COLLATERAL_CONTRACT and the contract operator's key in
// WITHDRAW_OPERATOR_KEY_FILE (hex in a file) or WITHDRAW_OPERATOR_KEY.
func withdrawalExecutor(ctx context.Context, p *process.Process, r *config.Reader) (*settler.Executor, error) {
	rpcURL := r.String("CHAIN_RPC_URL", "")
	if rpcURL == "" {
		p.Log.Warn("CHAIN_RPC_URL is not set: withdrawals are debited but not paid")
		return nil, nil
	}
	contract := r.String("COLLATERAL_CONTRACT", "")
	if !common.IsHexAddress(contract) {
		return nil, fmt.Errorf("COLLATERAL_CONTRACT must be the 0x address of the collateral contract when CHAIN_RPC_URL is set, got %q", contract)
	}
	keyHex := r.String("WITHDRAW_OPERATOR_KEY", "")
	if file := r.String("WITHDRAW_OPERATOR_KEY_FILE", ""); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("WITHDRAW_OPERATOR_KEY_FILE: %w", err)
		}
		keyHex = string(b)
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(keyHex), "0x"))
	if err != nil {
		return nil, fmt.Errorf("WITHDRAW_OPERATOR_KEY(_FILE) must hold the operator's hex private key when CHAIN_RPC_URL is set: %w", err)
	}
	cfg := settler.ExecutorConfig{
		ChainID: p.Common.Environment.ChainID, Contract: common.HexToAddress(contract), OperatorKey: key,
		Confirmations: uint64(r.Int("CHAIN_CONFIRMATIONS", 12, 0, 10_000)),
		Poll:          r.Duration("CHAIN_POLL", 2*time.Second, 100*time.Millisecond, time.Minute),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	client, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("CHAIN_RPC_URL: %w", err)
	}
	if cfg.Metrics, err = settler.NewExecutorMetrics(p.Registry); err != nil {
		return nil, err
	}
	return settler.NewExecutor(cfg, client, p.Pool, p.Kafka, p.Log)
}
