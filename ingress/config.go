package ingress

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"blockspace.exchange/ingress/internal/clock"
	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/httpx"
)

// Config is the ingress's configuration. ConfigFromEnv reads it for the
// binary; the dev stack reads the same variables over its own defaults
// (FromEnv).
type Config struct {
	// Environment is the process's (ENVIRONMENT, process.Common); the
	// caller sets it.
	Environment environment.Environment
	MaxInFlight int    // MAX_IN_FLIGHT: concurrent requests before 429 (httpx.MaxInFlightFromEnv)
	Addr        string // HTTP_ADDR: the REST listener (:8080)
	Auth        AuthConfig
	// Orders configures order entry and Outbox the delivery of stored
	// commands; zero values take their defaults.
	Orders    OrderEntryConfig
	Outbox    OutboxConfig
	Orderflow OrderflowConfig
	Deposits  DepositsConfig
	Markets   MarketsConfig
}

// DepositsConfig configures the watcher of the collateral contract's
// deposits (DepositWatcher).
type DepositsConfig struct {
	// ChainRPCURL is the chain's JSON-RPC (CHAIN_RPC_URL); "" runs no
	// watcher. Contract is the collateral contract (COLLATERAL_CONTRACT,
	// required with it).
	ChainRPCURL string
	Contract    common.Address
	// Confirmations is how many blocks must follow a deposit's block
	// before it is credited and Poll the interval between head checks
	// (CHAIN_CONFIRMATIONS and CHAIN_POLL, chain.FollowFromEnv).
	Confirmations uint64
	Poll          time.Duration
	// StartBlock is the first block to scan when no cursor is stored
	// (CHAIN_START_BLOCK, 0: the contract's deployment block).
	StartBlock uint64
	// Instance names one incarnation of a chain that starts again from
	// its genesis (the dev stack's chain, new at every start); empty on
	// real chains.
	Instance string
}

// MarketsConfig configures the validator routes and the slot clock
// (docs/markets.md).
type MarketsConfig struct {
	// BeaconURL is the beacon node (BEACON_URL); "" serves no validator
	// routes and runs no clock. BeaconTimeout bounds a request to it
	// (BEACON_TIMEOUT, 5s, 100ms to 1m).
	BeaconURL     string
	BeaconTimeout time.Duration
	// SlotClock (SLOT_CLOCK, true): false, like 0, no or off, keeps this
	// instance from publishing ticks; two clocks may run at once.
	SlotClock bool
	// TotalGas is the block's gas (MARKET_TOTAL_GAS, 36000000, 21000 to
	// 2^40) and TotalPreconf the part of it sold as inclusion
	// preconfirmations (MARKET_TOTAL_PRECONF, 18000000, 0 to 2^40).
	TotalGas, TotalPreconf int64
}

// DefaultConfig is the configuration with no variable set; the caller
// sets Environment.
func DefaultConfig() Config {
	p := clock.DefaultParams()
	return Config{
		MaxInFlight: httpx.DefaultMaxInFlight,
		Addr:        ":8080",
		Auth:        defaultAuth(),
		Orders:      defaultOrders(),
		Outbox:      defaultOutbox(),
		Orderflow:   defaultOrderflow(),
		Deposits:    DepositsConfig{Confirmations: chain.DefaultConfirmations, Poll: chain.DefaultPoll},
		Markets:     MarketsConfig{BeaconTimeout: 5 * time.Second, SlotClock: true, TotalGas: p.TotalGas, TotalPreconf: p.TotalPreconf},
	}
}

// ConfigFromEnv reads the ingress's variables over DefaultConfig
// (docs/deploy.md lists them with their ranges); errors are reported on
// r. The access-token signing key is left nil when none is configured:
// the binary requires one, the dev stack makes its own.
func ConfigFromEnv(r *config.Reader) Config { return DefaultConfig().FromEnv(r) }

// FromEnv returns c with each variable that is set in place of its
// field: c's fields are the defaults, so the dev stack reads the same
// variables over its own. The chain's confirmations and poll interval are
// read, with chain.FollowFromEnv's defaults, only when CHAIN_RPC_URL is
// set.
func (c Config) FromEnv(r *config.Reader) Config {
	c.MaxInFlight = httpx.MaxInFlightFromEnv(r)
	c.Addr = r.String("HTTP_ADDR", c.Addr)
	c.Auth = c.Auth.fromEnv(r)
	c.Orders = c.Orders.fromEnv(r)
	c.Outbox = c.Outbox.fromEnv(r)
	c.Orderflow = c.Orderflow.fromEnv(r)
	c.Deposits = c.Deposits.fromEnv(r)
	c.Markets = c.Markets.fromEnv(r)
	return c
}

func (d DepositsConfig) fromEnv(r *config.Reader) DepositsConfig {
	d.ChainRPCURL = r.String("CHAIN_RPC_URL", d.ChainRPCURL)
	if d.ChainRPCURL == "" {
		return d
	}
	d.Contract = chain.ContractFromEnv(r)
	follow := chain.FollowFromEnv(r)
	d.Confirmations, d.Poll = follow.Confirmations, follow.Poll
	d.StartBlock = uint64(r.Int("CHAIN_START_BLOCK", int(d.StartBlock), 0, 1<<62))
	return d
}

func (m MarketsConfig) fromEnv(r *config.Reader) MarketsConfig {
	m.BeaconURL = r.String("BEACON_URL", m.BeaconURL)
	m.BeaconTimeout = r.Duration("BEACON_TIMEOUT", m.BeaconTimeout, 100*time.Millisecond, time.Minute)
	m.SlotClock = r.Bool("SLOT_CLOCK", m.SlotClock)
	m.TotalGas = int64(r.Int("MARKET_TOTAL_GAS", int(m.TotalGas), 21_000, 1<<40))
	m.TotalPreconf = int64(r.Int("MARKET_TOTAL_PRECONF", int(m.TotalPreconf), 0, 1<<40))
	if _, err := m.params(); err != nil {
		r.Fail("%v", err)
	}
	return m
}

// params are the parameters the slot clock puts into every market.open:
// the documented defaults with m's gas totals, the largest preconf order
// at most the preconf supply.
func (m MarketsConfig) params() (clock.Params, error) {
	p := clock.DefaultParams()
	p.TotalGas, p.TotalPreconf = m.TotalGas, m.TotalPreconf
	p.MaxQuantity = min(p.MaxQuantity, max(p.TotalPreconf, p.MinQuantity))
	if err := p.Validate(); err != nil {
		return clock.Params{}, fmt.Errorf("MARKET_TOTAL_GAS/MARKET_TOTAL_PRECONF: %w", err)
	}
	return p, nil
}
