package devstack

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/ingress"
	"blockspace.exchange/settler"
)

// fundingParts are the chain side of funding in the dev stack: the
// collateral contract on the dev chain, the deposit watcher and the
// withdrawal executor.
type fundingParts struct {
	watcher  func(context.Context) error
	executor *settler.Executor
}

// devCollateral names the dev chain's collateral contract before the
// services start, so query-api answers its address: the contract is the
// operator key's first creation, so its address is known in advance.
func (s *Stack) devCollateral() {
	if s.cfg.Environment.ChainID == 1337 && s.cfg.Query.CollateralContract == "" {
		s.cfg.Query.CollateralContract = devchain.CollateralAddress().Hex()
	}
}

// chainOptions serves the dev chain's JSON-RPC on CHAIN_ADDR.
func (s *Stack) chainOptions() ([]devchain.Option, error) {
	if s.cfg.ChainAddr == "" {
		return nil, nil
	}
	host, portText, err := net.SplitHostPort(s.cfg.ChainAddr)
	if err != nil {
		return nil, fmt.Errorf("CHAIN_ADDR: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("CHAIN_ADDR: port %q: %w", portText, err)
	}
	if port == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("CHAIN_ADDR: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	s.chainURL = "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	return []devchain.Option{devchain.WithRPC(host, port)}, nil
}

// startFunding deploys the collateral contract on the fresh dev chain and
// builds the deposit watcher and the withdrawal executor on it. The dev
// chain starts empty at every start, so the watcher's stored position on
// the previous chain is dropped.
func (s *Stack) startFunding(ctx context.Context) error {
	chain := s.of.chain
	if s.cfg.Environment.ChainID != 1337 || chain == nil {
		return nil
	}
	addr, err := chain.DeployCollateral(ctx)
	if err != nil {
		return err
	}
	if addr != devchain.CollateralAddress() {
		return fmt.Errorf("dev collateral contract deployed at %s, expected %s", addr.Hex(), devchain.CollateralAddress().Hex())
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM chain_cursors WHERE chain_id = $1`, s.cfg.Environment.ChainID); err != nil {
		return fmt.Errorf("reset dev chain cursor: %w", err)
	}
	// Payouts signed for the previous chain can never be mined on this
	// one (their nonces belong to it): the executor signs them again, and
	// what the new contract cannot pay fails and returns the funds.
	if _, err := s.pool.Exec(ctx, `UPDATE withdraw_requests SET raw_tx = NULL WHERE chain_id = $1 AND status IN (1, 2)`,
		s.cfg.Environment.ChainID); err != nil {
		return fmt.Errorf("drop payouts of the previous dev chain: %w", err)
	}
	defer leaveStage(ctx)
	enterStage(ctx, StageIngress)
	w, err := ingress.DepositWatcher(s.cfg.Environment.ChainID, ingress.DepositsConfig{
		Contract: addr, Confirmations: s.cfg.ChainConfirmations,
		Poll: s.cfg.ChainPoll, Instance: "s" + strconv.FormatInt(time.Now().UnixMilli(), 10),
	}, chain.Client(), ingress.Deps{Pool: s.pool, Kafka: s.kcl, Logger: s.log.With("service", "ingress"), Registry: s.registry})
	if err != nil {
		return err
	}
	s.funding.watcher = w.Run
	enterStage(ctx, StageSettler)
	s.funding.executor, err = settler.NewExecutor(settler.WithdrawalConfig{
		ChainID: s.cfg.Environment.ChainID, Contract: addr, OperatorKey: chain.Key(devchain.OperatorKey),
		Confirmations: s.cfg.ChainConfirmations, Poll: s.cfg.ChainPoll,
	}, chain.Client(), s.pool, s.kcl, s.log.With("service", "settler"), s.registry)
	return err
}

func (s *Stack) fundingLoops() []func(context.Context) error {
	if s.funding.executor == nil {
		return nil
	}
	return []func(context.Context) error{staged(StageIngress, s.funding.watcher), staged(StageSettler, s.funding.executor.Run)}
}

// Chain returns the dev chain (nil outside the dev environment) and the
// URL of its JSON-RPC ("" when CHAIN_ADDR is empty).
func (s *Stack) Chain() (*devchain.Chain, string) { return s.of.chain, s.chainURL }

// devChainPoll is how often the dev stack's watcher and executor look at
// the dev chain.
const devChainPoll = 250 * time.Millisecond
