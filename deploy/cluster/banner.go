package cluster

import (
	"fmt"
	"io"
	"strings"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/kafka/kraft"
)

// PrintBanner tells the operator where everything is, with the lines `make
// run` prints for the same addresses (REST base, originator, searcher,
// orderflow, kafka), each pointing at the gateway or the brokers.
func (c *Cluster) PrintBanner(w io.Writer) {
	var b strings.Builder
	rest := c.REST()
	fmt.Fprintf(&b, "\nexchange cluster is up (dev, chain %d): 3 Kafka brokers, %d service processes, nginx gateway\n", environment.DevChainID, len(c.All()))
	fmt.Fprintf(&b, "  REST base     %s   (gateway; try %s/api/v1/p/tokens)\n", rest, rest)
	fmt.Fprintf(&b, "  OpenAPI       %s/api/v1/openapi.yaml\n", rest)
	fmt.Fprintf(&b, "  market board  %s/   (live over ws%s/ws)\n", rest, strings.TrimPrefix(rest, "http"))
	fmt.Fprintf(&b, "  kafka         %s   (Apache Kafka %s, 3 brokers, replication 3, min.insync.replicas 2)\n", strings.Join(c.Brokers(), ","), kraft.Version)
	fmt.Fprintf(&b, "  database      %s   (private cluster in %s/postgres)\n", c.DatabaseURL(), c.cfg.DataDir)
	fmt.Fprintf(&b, "  originator    http://%s/v1   (JSON-RPC; /v1/<API_KEY> for partners)\n", c.Public("8081"))
	fmt.Fprintf(&b, "  searcher      http://%s/v1/<API_KEY>   (JSON-RPC POST)\n", c.Public("8082"))
	fmt.Fprintf(&b, "  searcher ws   ws://%s/v1/<API_KEY>\n", c.Public("8082"))
	fmt.Fprintf(&b, "  orderflow     http://%s   (/v1/auth/*, /v1/tx/<hash>, /v1/bundle, /v1/<API_KEY>/refunds)\n", c.Public("8083"))
	fmt.Fprintf(&b, "  dev chain     %s   (chain %d; collateral %s)\n", c.ChainURL(), environment.DevChainID, devchain.CollateralAddress().Hex())
	blocks := "a block every " + c.cfg.BlockInterval.String()
	if c.cfg.ManualBlocks {
		blocks = "blocks on evm_mine only"
	}
	fmt.Fprintf(&b, "  dev builder   %s   (chain %d, %s)\n", c.BuilderURL(), environment.DevChainID, blocks)
	fmt.Fprintf(&b, "  dev beacon    %s   (standard beacon API; every slot proposed by the demo validator)\n", c.devnet.BeaconURL)
	fmt.Fprintf(&b, "  slot clock    genesis %s, %s slots\n", c.genesis.UTC().Format("2006-01-02T15:04:05Z"), c.cfg.SlotLength)
	for _, in := range c.All() {
		fmt.Fprintf(&b, "  %-13s admin http://%s   (log %s)\n", in.Name, in.Admin(), in.LogPath())
	}
	fmt.Fprintf(&b, "  gateway       log %s\n", c.gateway.logPath)
	fmt.Fprintf(&b, "stop with Ctrl-C\n\n")
	fmt.Fprint(w, b.String())
}
