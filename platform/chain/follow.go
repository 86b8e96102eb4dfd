package chain

import (
	"time"

	"github.com/ethereum/go-ethereum/common"

	"blockspace.exchange/platform/config"
)

// The defaults of how the ingress's deposit watcher and the settler's
// withdrawal executor follow a public chain, written once for both.
const (
	// DefaultConfirmations is CHAIN_CONFIRMATIONS' default: the blocks that
	// must follow a block before what it holds is final (a deposit is
	// credited, a payout is final).
	DefaultConfirmations = 12
	// DefaultPoll is CHAIN_POLL's default: how often a watcher reads the
	// chain.
	DefaultPoll = 2 * time.Second
)

// Follow is how a watcher of the collateral contract follows the chain.
type Follow struct {
	Confirmations uint64        // CHAIN_CONFIRMATIONS (12, 0 to 10000)
	Poll          time.Duration // CHAIN_POLL (2s, 100ms to 1m)
}

// FollowFromEnv reads CHAIN_CONFIRMATIONS and CHAIN_POLL; errors are
// reported on r.
func FollowFromEnv(r *config.Reader) Follow {
	return Follow{
		Confirmations: uint64(r.Int("CHAIN_CONFIRMATIONS", DefaultConfirmations, 0, 10_000)),
		Poll:          r.Duration("CHAIN_POLL", DefaultPoll, 100*time.Millisecond, time.Minute),
	}
}

// ContractFromEnv reads COLLATERAL_CONTRACT, which a service that watches
// the chain (CHAIN_RPC_URL set) requires; errors are reported on r.
func ContractFromEnv(r *config.Reader) common.Address {
	contract := r.String("COLLATERAL_CONTRACT", "")
	if !common.IsHexAddress(contract) {
		r.Fail("COLLATERAL_CONTRACT must be the 0x address of the collateral contract when CHAIN_RPC_URL is set, got %q", contract)
	}
	return common.HexToAddress(contract)
}
