// Package devchain is the Ethereum chain of the dev stack: go-ethereum's
// simulated backend (chain id 1337) with funded dev accounts, blocks made
// on an interval and on demand, and a dev builder that takes
// eth_sendBundle and includes bundles in the next block. Other services
// reuse one Chain (a collateral contract can be deployed on it with
// Client and a dev key).
package devchain

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"blockspace.exchange/platform/chain/collateral"
)

// DevKeys are the private keys of the funded dev accounts, each holding
// 1,000,000 ETH at genesis. They are public test keys: never use them on
// a real chain. Key 0 pays orderflow refunds in the dev stack; tests and
// examples use the others.
var DevKeys = []string{
	"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
	"59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
	"5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
	"7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
	"47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926e",
	"8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
	// OperatorKey: deploys the collateral contract and pays withdrawals.
	"92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
}

// OperatorKey is the index in DevKeys of the key that deploys the dev
// collateral contract as its first transaction (so the contract's address
// is always CollateralAddress) and signs its withdrawals.
const OperatorKey = 6

// Chain is a running simulated chain.
type Chain struct {
	backend *simulated.Backend
	mu      sync.Mutex // serializes block production with the builder's inclusion
	keys    []*ecdsa.PrivateKey
}

// Option changes how the chain starts.
type Option = func(nodeConf *node.Config, ethConf *ethconfig.Config)

// WithRPC serves the chain's JSON-RPC (eth, net, web3) over HTTP on
// host:port, so that other processes (wallets, dev commands) reach it.
func WithRPC(host string, port int) Option {
	return func(nodeConf *node.Config, _ *ethconfig.Config) {
		nodeConf.HTTPHost, nodeConf.HTTPPort = host, port
		nodeConf.HTTPModules = []string{"eth", "net", "web3"}
		nodeConf.HTTPVirtualHosts = []string{"*"}
	}
}

// New starts the chain with the dev accounts funded.
func New(opts ...Option) (*Chain, error) {
	alloc := types.GenesisAlloc{}
	var keys []*ecdsa.PrivateKey
	balance, _ := new(big.Int).SetString("1000000000000000000000000", 10)
	for _, h := range DevKeys {
		k, err := crypto.HexToECDSA(h)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		alloc[crypto.PubkeyToAddress(k.PublicKey)] = types.Account{Balance: balance}
	}
	opts = append([]Option{simulated.WithBlockGasLimit(60_000_000)}, opts...)
	backend, err := newBackend(alloc, opts)
	if err != nil {
		return nil, err
	}
	return &Chain{backend: backend, keys: keys}, nil
}

// newBackend starts the simulated backend, which panics when its node
// cannot start (its JSON-RPC port taken, say); that becomes an error.
func newBackend(alloc types.GenesisAlloc, opts []Option) (b *simulated.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("start simulated chain: %v", r)
		}
	}()
	return simulated.NewBackend(alloc, opts...), nil
}

// CollateralAddress is where the dev collateral contract lives: the first
// contract the operator key creates.
func CollateralAddress() common.Address {
	k, _ := crypto.HexToECDSA(DevKeys[OperatorKey])
	return crypto.CreateAddress(crypto.PubkeyToAddress(k.PublicKey), 0)
}

// Client is the ethclient-compatible client of the chain.
func (c *Chain) Client() simulated.Client { return c.backend.Client() }

// Key returns dev key i.
func (c *Chain) Key(i int) *ecdsa.PrivateKey { return c.keys[i] }

// Address returns the address of dev key i.
func (c *Chain) Address(i int) common.Address { return crypto.PubkeyToAddress(c.keys[i].PublicKey) }

// ChainID is the simulated chain's id (environment.DevChainID).
func (c *Chain) ChainID() *big.Int { return big.NewInt(1337) }

// Mine makes a block of what the pool holds and returns its hash.
func (c *Chain) Mine() common.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backend.Commit()
}

// MineWith makes a block now: under the chain's lock it calls prepare
// (the builder adds its bundles) and commits. It returns the new block's
// hash.
func (c *Chain) MineWith(ctx context.Context, prepare func(ctx context.Context)) common.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prepare != nil {
		prepare(ctx)
	}
	return c.backend.Commit()
}

// Run makes a block every interval until ctx ends, each with MineWith.
// An interval of 0 makes no block on its own: blocks are then made on
// request only (Mine, MineWith, the dev builder's evm_mine).
func (c *Chain) Run(ctx context.Context, interval time.Duration, prepare func(ctx context.Context)) error {
	if interval <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c.MineWith(ctx, prepare)
	}
}

// Close stops the chain.
func (c *Chain) Close() error { return c.backend.Close() }

// DeployCollateral deploys the collateral contract from the operator key
// (its first transaction, at CollateralAddress) with that key as operator,
// and mines it.
func (c *Chain) DeployCollateral(ctx context.Context) (common.Address, error) {
	auth, err := bind.NewKeyedTransactorWithChainID(c.keys[OperatorKey], c.ChainID())
	if err != nil {
		return common.Address{}, err
	}
	auth.Context = ctx
	addr, _, _, err := collateral.DeployCollateral(auth, c.Client(), auth.From)
	if err != nil {
		return common.Address{}, fmt.Errorf("deploy collateral contract: %w", err)
	}
	c.Mine()
	return addr, nil
}
