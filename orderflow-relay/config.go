package relay

import (
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/orderflow-relay/internal/builders"
	"blockspace.exchange/orderflow-relay/internal/inclusions"
	"blockspace.exchange/orderflow-relay/internal/stream"
	"blockspace.exchange/platform/config"
	of "blockspace.exchange/platform/orderflow"
)

// DefaultRefundConfirmations is REFUND_CONFIRMATIONS' default.
const DefaultRefundConfirmations = 2

// DefaultConfig is the configuration with no variable set. ChainID is
// the environment's and is left to the caller.
func DefaultConfig() Config {
	return Config{
		Addr:                ":8082",
		KeyTTL:              of.DefaultKeyTTL,
		SocketsPerKey:       stream.DefaultSocketsPerKey,
		MaxSockets:          stream.DefaultMaxSockets,
		BuilderBatch:        builders.DefaultBatch,
		BackrunWait:         builders.DefaultBackrunWait,
		BuilderRetry:        builders.DefaultRetryFor,
		BuilderGroup:        builders.DefaultGroup,
		ChainPoll:           inclusions.DefaultPoll,
		RefundConfirmations: DefaultRefundConfirmations,
	}
}

// ConfigFromEnv reads the relay's variables over DefaultConfig
// (docs/deploy.md lists them with their ranges); errors are reported on r.
func ConfigFromEnv(r *config.Reader) Config { return DefaultConfig().FromEnv(r) }

// FromEnv returns c with each variable that is set in place of its field:
// c's fields are the defaults, so the dev stack reads the same variables
// over its own.
func (c Config) FromEnv(r *config.Reader) Config {
	c.Addr = r.String("SEARCHER_WS_ADDR", c.Addr)
	if urls := r.List("BUILDER_URLS"); urls != nil {
		c.BuilderURLs = urls
	}
	c.KeyTTL = r.Duration("ORDERFLOW_KEY_TTL", c.KeyTTL, 10*time.Millisecond, time.Second)
	c.SocketsPerKey = r.Int("SEARCHER_SOCKETS_PER_KEY", c.SocketsPerKey, 1, 1<<16)
	c.MaxSockets = r.Int("SEARCHER_SOCKETS_MAX", c.MaxSockets, 1, 1<<20)
	c.BuilderBatch = r.Int("BUILDER_BATCH", c.BuilderBatch, 1, 1000)
	c.BackrunWait = r.Duration("BACKRUN_WAIT", c.BackrunWait, 100*time.Millisecond, 5*time.Minute)
	c.BuilderRetry = r.Duration("BUILDER_RETRY", c.BuilderRetry, 100*time.Millisecond, 5*time.Minute)
	c.BuilderGroup = r.String("ORDERFLOW_RELAY_GROUP", c.BuilderGroup)
	c.ChainRPCURL = r.String("CHAIN_RPC_URL", c.ChainRPCURL)
	c.ChainPoll = r.Duration("CHAIN_POLL", c.ChainPoll, 10*time.Millisecond, time.Minute)
	c.RefundConfirmations = uint64(r.Int("REFUND_CONFIRMATIONS", int(c.RefundConfirmations), 0, 1000))
	if k := r.String("REFUND_PAYER_KEY", ""); k != "" {
		key, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimPrefix(k, "0x"), "0X"))
		if err != nil {
			r.Fail("REFUND_PAYER_KEY: not a hex secp256k1 private key")
		}
		c.PayerKey = key
	}
	return c
}
