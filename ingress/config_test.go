package ingress_test

import (
	"strings"
	"testing"
	"time"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/chain"
	"blockspace.exchange/platform/config"
)

// SLOT_CLOCK is read as a boolean (config.Reader.Bool, which knows the
// words): true when unset, false when turned off, and a word that is not
// one stops the start instead of leaving the clock running.
func TestSlotClock(t *testing.T) {
	want := map[string]bool{"": true, "off": false, "0": false}
	for value, on := range want {
		r := config.FromMap(map[string]string{"SLOT_CLOCK": value})
		if got := ingress.ConfigFromEnv(r).Markets.SlotClock; got != on || r.Err() != nil {
			t.Errorf("SLOT_CLOCK=%q: %v, %v; want %v", value, got, r.Err(), on)
		}
	}
	r := config.FromMap(map[string]string{"SLOT_CLOCK": "flase"})
	ingress.ConfigFromEnv(r)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "SLOT_CLOCK") {
		t.Errorf("SLOT_CLOCK=flase: error %v, want one naming SLOT_CLOCK", err)
	}
}

// With no variable set the configuration is the documented defaults; the
// chain is not watched, so its confirmations and poll keep the shared
// defaults.
func TestConfigFromEnvDefaults(t *testing.T) {
	r := config.FromMap(nil)
	c := ingress.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.Orderflow.OriginatorAddr != ":8081" || c.Orderflow.SearcherAddr != ":8082" || c.Orderflow.AccountsAddr != ":8083" {
		t.Errorf("listeners %q %q %q %q", c.Addr, c.Orderflow.OriginatorAddr, c.Orderflow.SearcherAddr, c.Orderflow.AccountsAddr)
	}
	if c.Auth.SigningKey != nil || c.Auth.Product != "Blockspace Exchange" || c.Auth.RatePerIP != (ingress.Rate{PerMinute: 60, Burst: 30}) {
		t.Errorf("auth %+v", c.Auth)
	}
	if c.Orders.MaxPlaceOrders != 50 || c.Orders.AnswerWait != 200*time.Millisecond || c.Orders.Lanes != 2 {
		t.Errorf("orders %+v", c.Orders)
	}
	if c.Orderflow.DefaultRefundPercent != 90 || c.Orderflow.SubmitRatePerSender != (ingress.Rate{PerMinute: 60, Burst: 20}) {
		t.Errorf("orderflow %+v", c.Orderflow)
	}
	if c.Deposits.ChainRPCURL != "" || c.Deposits.Confirmations != chain.DefaultConfirmations || c.Deposits.Poll != chain.DefaultPoll {
		t.Errorf("deposits %+v", c.Deposits)
	}
	if c.Markets.BeaconURL != "" || !c.Markets.SlotClock || c.Markets.TotalGas != 36_000_000 || c.Markets.TotalPreconf != 18_000_000 {
		t.Errorf("markets %+v", c.Markets)
	}
}

// Each variable takes the place of its default; a chain to watch needs
// the collateral contract, and then its confirmations and poll are read.
func TestConfigFromEnvReadsEveryPart(t *testing.T) {
	r := config.FromMap(map[string]string{
		"HTTP_ADDR": ":9000", "ORIGINATOR_ADDR": ":9001", "AUTH_PRODUCT": "Test", "AUTH_LOGIN_RATE_PER_IP": "5",
		"ORDER_ANSWER_WAIT": "0", "OUTBOX_RELAY_EVERY": "3s", "ORDERFLOW_RATE_PER_SENDER": "0",
		"CHAIN_RPC_URL": "http://127.0.0.1:8545", "COLLATERAL_CONTRACT": "0x00000000000000000000000000000000000000c0",
		"CHAIN_CONFIRMATIONS": "3", "CHAIN_POLL": "500ms", "CHAIN_START_BLOCK": "77",
		"BEACON_URL": "http://127.0.0.1:5052", "MARKET_TOTAL_PRECONF": "1000000",
	})
	c := ingress.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.Orderflow.OriginatorAddr != ":9001" || c.Auth.Product != "Test" || c.Auth.RatePerIP.PerMinute != 5 {
		t.Errorf("listeners and auth: %q %q %+v", c.Addr, c.Orderflow.OriginatorAddr, c.Auth)
	}
	if c.Orders.AnswerWait >= 0 || c.Outbox.RelayEvery != 3*time.Second || c.Orderflow.SubmitRatePerSender.PerMinute != 0 {
		t.Errorf("orders %+v, outbox %+v, orderflow %+v", c.Orders, c.Outbox, c.Orderflow)
	}
	d := c.Deposits
	if !strings.EqualFold(d.Contract.Hex(), "0x00000000000000000000000000000000000000c0") || d.Confirmations != 3 || d.Poll != 500*time.Millisecond || d.StartBlock != 77 {
		t.Errorf("deposits %+v", d)
	}
	if c.Markets.BeaconURL != "http://127.0.0.1:5052" || c.Markets.TotalPreconf != 1_000_000 {
		t.Errorf("markets %+v", c.Markets)
	}

	r = config.FromMap(map[string]string{"CHAIN_RPC_URL": "http://127.0.0.1:8545"})
	ingress.ConfigFromEnv(r)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "COLLATERAL_CONTRACT") {
		t.Errorf("CHAIN_RPC_URL without COLLATERAL_CONTRACT: %v, want an error naming COLLATERAL_CONTRACT", err)
	}
	r = config.FromMap(map[string]string{"MARKET_TOTAL_GAS": "21000", "MARKET_TOTAL_PRECONF": "1000000"})
	ingress.ConfigFromEnv(r)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "MARKET_TOTAL") {
		t.Errorf("preconf above the block's gas: %v, want an error naming MARKET_TOTAL_*", err)
	}
}

// FromEnv reads over the caller's defaults: a limit the dev stack turns
// off stays off until its variable is set.
func TestFromEnvKeepsTheCallersDefaults(t *testing.T) {
	dev := ingress.DefaultConfig()
	dev.Orderflow.SubmitRatePerIP = ingress.Rate{}
	r := config.FromMap(map[string]string{"ORDERFLOW_RATE_PER_SENDER": "7"})
	c := dev.FromEnv(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Orderflow.SubmitRatePerIP.PerMinute != 0 {
		t.Errorf("per-IP limit %+v, want it off", c.Orderflow.SubmitRatePerIP)
	}
	if c.Orderflow.SubmitRatePerSender != (ingress.Rate{PerMinute: 7, Burst: 20}) {
		t.Errorf("per-sender limit %+v, want 7/min over the default burst", c.Orderflow.SubmitRatePerSender)
	}
}

// A rate takes each of its two variables or its default, and names a
// variable out of range (a negative rate, a burst of 0).
func TestRateFromEnv(t *testing.T) {
	r := config.FromMap(map[string]string{"AUTH_LOGIN_RATE_PER_IP": "120"})
	if got := ingress.ConfigFromEnv(r).Auth.RatePerIP; got != (ingress.Rate{PerMinute: 120, Burst: 30}) || r.Err() != nil {
		t.Fatalf("rate %+v, error %v", got, r.Err())
	}
	r = config.FromMap(map[string]string{"AUTH_LOGIN_RATE_PER_IP": "-1", "AUTH_LOGIN_BURST_PER_IP": "0"})
	ingress.ConfigFromEnv(r)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "AUTH_LOGIN_RATE_PER_IP") || !strings.Contains(err.Error(), "AUTH_LOGIN_BURST_PER_IP") {
		t.Fatalf("error %v, want both variables named", err)
	}
}
