package devstack

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// fixedAddress is a listener the stack will open, by the variable that
// sets it.
type fixedAddress struct{ variable, addr string }

// fixedAddresses lists the listeners of cfg that name a port: a port of 0
// is chosen free at start and cannot be taken.
func fixedAddresses(cfg Config) []fixedAddress {
	all := []fixedAddress{
		{"HTTP_ADDR", cfg.RESTAddr}, {"ADMIN_ADDR", cfg.AdminAddr},
		{"ORIGINATOR_ADDR", cfg.OriginatorAddr}, {"SEARCHER_ADDR", cfg.SearcherAddr},
		{"ORDERFLOW_ADDR", cfg.OrderflowAddr}, {"DEV_BUILDER_ADDR", cfg.DevBuilderAddr},
	}
	if len(cfg.KafkaBrokers) == 0 {
		all = append(all, fixedAddress{"KAFKA_ADDR", cfg.KafkaAddr})
	}
	if cfg.ChainAddr != "" {
		all = append(all, fixedAddress{"CHAIN_ADDR", cfg.ChainAddr})
	}
	var fixed []fixedAddress
	for _, a := range all {
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port != "0" {
			fixed = append(fixed, a)
		}
	}
	return fixed
}

// checkAddresses fails, before anything starts, when a listener's address
// cannot be bound, with one line naming the variable that moves it. A
// local Ethereum node on 8545 or a Kafka on 9092 is common on a
// developer's machine; without this the dev chain's library panicked and
// the brokers failed with their own words. Another program can still take
// a port between this check and the bind; the listeners then fail too,
// with the address.
func checkAddresses(cfg Config) error {
	for _, a := range fixedAddresses(cfg) {
		ln, err := net.Listen("tcp", a.addr)
		if err != nil {
			return addressError(a, err)
		}
		ln.Close()
	}
	return nil
}

func addressError(a fixedAddress, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s=%s is taken by another program; set %s to a free address (port 0 picks one)", a.variable, a.addr, a.variable)
	}
	return fmt.Errorf("%s=%s cannot be listened on: %w", a.variable, a.addr, err)
}
