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
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
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
}

// Chain is a running simulated chain.
type Chain struct {
	backend *simulated.Backend
	mu      sync.Mutex // serializes block production with the builder's inclusion
	keys    []*ecdsa.PrivateKey
}

// New starts the chain with the dev accounts funded.
func New() (*Chain, error) {
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
	return &Chain{backend: simulated.NewBackend(alloc, simulated.WithBlockGasLimit(60_000_000)), keys: keys}, nil
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

// Run makes a block every interval until ctx ends; before each block it
// calls prepare (the builder adds its bundles) under the chain's lock.
func (c *Chain) Run(ctx context.Context, interval time.Duration, prepare func(ctx context.Context)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c.mu.Lock()
		if prepare != nil {
			prepare(ctx)
		}
		c.backend.Commit()
		c.mu.Unlock()
	}
}

// Close stops the chain.
func (c *Chain) Close() error { return c.backend.Close() }
