// Package environment names the chains the exchange runs against and
// their slot clocks, so every service derives chain id and slot times the
// same way (docs/markets.md "Slot time").
package environment

import (
	"fmt"
	"strings"
	"time"
)

// Environment is one deployment target.
type Environment struct {
	Name        string
	ChainID     int64
	Genesis     time.Time     // time of slot 0
	SlotLength  time.Duration // 12 s on public chains
	Description string
}

// DevChainID is the chain id of go-ethereum's simulated backend, the chain
// of the one-machine dev stack.
const DevChainID = 1337

var known = []Environment{
	{Name: "mainnet", ChainID: 1, Genesis: time.Unix(1606824023, 0), SlotLength: 12 * time.Second, Description: "Ethereum mainnet"},
	{Name: "hoodi", ChainID: 0x88BB0, Genesis: time.Unix(1742213400, 0), SlotLength: 12 * time.Second, Description: "Hoodi testnet"},
	{Name: "dev", ChainID: DevChainID, SlotLength: 2 * time.Second, Description: "simulated chain of the dev stack"},
}

// Lookup returns the named environment. The dev environment's genesis is
// left zero: the dev stack chooses it at start (and may change the slot
// length) through its own configuration.
func Lookup(name string) (Environment, error) {
	for _, e := range known {
		if strings.EqualFold(e.Name, name) {
			return e, nil
		}
	}
	return Environment{}, fmt.Errorf("unknown environment %q: use mainnet, hoodi or dev", name)
}
