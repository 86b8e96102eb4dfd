package devstack

import (
	"blockspace.exchange/platform/kafka/kraft"

	"fmt"
	"io"
	"strings"
)

// Addresses are where a client finds the running stack.
type Addresses struct {
	REST      string
	Admin     string
	Kafka     []string
	Database  string
	DataDir   string
	Orderflow OrderflowAddresses
}

// Addresses returns the bound addresses (real ports even for ":0").
func (s *Stack) Addresses() Addresses {
	return Addresses{
		REST:      "http://" + s.restLn.Addr().String(),
		Admin:     "http://" + s.adminLn.Addr().String(),
		Kafka:     s.brokers,
		Database:  s.dbURL,
		DataDir:   s.cfg.DataDir,
		Orderflow: s.orderflowAddresses(),
	}
}

// PrintBanner tells the operator where everything is.
func (s *Stack) PrintBanner(w io.Writer) {
	a := s.Addresses()
	kafkaKind, dbKind := "external", "external"
	switch {
	case s.broker != nil && s.cfg.EmbeddedKafka == EmbeddedApache:
		kafkaKind = "Apache Kafka " + kraft.Version + ", data in " + s.cfg.DataDir + "/kafka-apache"
	case s.broker != nil:
		kafkaKind = "embedded, data in " + s.cfg.DataDir + "/kafka"
	}
	if s.pg != nil {
		dbKind = "private cluster in " + s.cfg.DataDir + "/postgres"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nexchange is up (%s, chain %d)\n", s.cfg.Environment.Name, s.cfg.Environment.ChainID)
	fmt.Fprintf(&b, "  REST base     %s   (try %s/api/v1/p/tokens)\n", a.REST, a.REST)
	fmt.Fprintf(&b, "  OpenAPI       %s/api/v1/openapi.yaml\n", a.REST)
	fmt.Fprintf(&b, "  market board  %s/   (live over ws%s/ws)\n", a.REST, strings.TrimPrefix(a.REST, "http"))
	fmt.Fprintf(&b, "  admin         %s   (/healthz /readyz /metrics)\n", a.Admin)
	fmt.Fprintf(&b, "  kafka         %s   (%s)\n", strings.Join(a.Kafka, ","), kafkaKind)
	fmt.Fprintf(&b, "  database      %s   (%s)\n", a.Database, dbKind)
	fmt.Fprintf(&b, "  originator    %s/v1   (JSON-RPC; /v1/<API_KEY> for partners)\n", a.Orderflow.Originator)
	fmt.Fprintf(&b, "  searcher      %s/v1/<API_KEY>   (JSON-RPC POST)\n", a.Orderflow.Searcher)
	fmt.Fprintf(&b, "  searcher ws   %s/v1/<API_KEY>\n", a.Orderflow.SearcherWS)
	fmt.Fprintf(&b, "  orderflow     %s   (/v1/auth/*, /v1/tx/<hash>, /v1/bundle, /v1/<API_KEY>/refunds)\n", a.Orderflow.Orderflow)
	blocks := "a block every " + s.cfg.DevBlockInterval.String()
	if s.cfg.DevBlockInterval == 0 {
		blocks = "blocks on evm_mine only"
	}
	fmt.Fprintf(&b, "  dev builder   %s   (chain %d, %s)\n", a.Orderflow.DevBuilder, s.cfg.Environment.ChainID, blocks)
	if chain, url := s.Chain(); chain != nil {
		rpc := url
		if rpc == "" {
			rpc = "in-process only (CHAIN_ADDR empty)"
		}
		fmt.Fprintf(&b, "  dev chain     %s   (chain %d; collateral %s)\n", rpc, s.cfg.Environment.ChainID, s.cfg.Query.CollateralContract)
	}
	fmt.Fprintf(&b, "  data dir      %s\n", a.DataDir)
	s.printMarkets(&b)
	fmt.Fprintf(&b, "stop with Ctrl-C\n\n")
	fmt.Fprint(w, b.String())
}
