package ingress

import (
	"time"

	"blockspace.exchange/ingress/internal/orderentry"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/outbox"
)

// OrderEntryConfig configures order entry (docs/api.md "Orders").
type OrderEntryConfig = orderentry.Config

// OrderEntryConfigFromEnv reads ORDER_MAX_PER_REQUEST (50 orders per place
// request), ORDER_BATCH_WAIT (1ms a batch waits for concurrent requests),
// ORDER_BATCH_MAX (1,000 orders per transaction), ORDER_LANES (2
// transactions at once) and ORDER_ANSWER_WAIT (200ms an answer waits for
// the matcher's decision; 0 answers at once, without it).
func OrderEntryConfigFromEnv(r *config.Reader) OrderEntryConfig {
	cfg := OrderEntryConfig{
		MaxPlaceOrders: r.Int("ORDER_MAX_PER_REQUEST", 50, 1, 1000),
		BatchWait:      r.Duration("ORDER_BATCH_WAIT", time.Millisecond, time.Microsecond, time.Second),
		BatchMax:       r.Int("ORDER_BATCH_MAX", 1000, 1, 100_000),
		Lanes:          r.Int("ORDER_LANES", 2, 1, 64),
		AnswerWait:     r.Duration("ORDER_ANSWER_WAIT", 200*time.Millisecond, 0, 5*time.Second),
	}
	if cfg.AnswerWait == 0 {
		cfg.AnswerWait = -1 // never wait
	}
	return cfg
}

// OutboxConfig configures the delivery of commands stored in the outbox
// (transfers, withdrawals, orders). Zero values take the defaults.
type OutboxConfig struct {
	// PublishTimeout is how long a request waits for Kafka to acknowledge
	// its commands (3s); RelayAge how old an unacknowledged row is before
	// the relay republishes it (5s); RelayEvery how often the relay looks
	// (1s).
	PublishTimeout, RelayAge, RelayEvery time.Duration
}

// OutboxConfigFromEnv reads OUTBOX_PUBLISH_TIMEOUT, OUTBOX_RELAY_AGE and
// OUTBOX_RELAY_EVERY.
func OutboxConfigFromEnv(r *config.Reader) OutboxConfig {
	return OutboxConfig{
		PublishTimeout: r.Duration("OUTBOX_PUBLISH_TIMEOUT", outbox.DefaultPublishTimeout, 10*time.Millisecond, time.Minute),
		RelayAge:       r.Duration("OUTBOX_RELAY_AGE", outbox.DefaultRelayAge, 10*time.Millisecond, time.Hour),
		RelayEvery:     r.Duration("OUTBOX_RELAY_EVERY", outbox.DefaultRelayEvery, 10*time.Millisecond, time.Minute),
	}
}

func (c OutboxConfig) build(deps Deps) *outbox.Outbox {
	o := outbox.New(deps.Pool, deps.Kafka, deps.Logger.With("component", "outbox"))
	o.Metrics = deps.OutboxMetrics
	if c.PublishTimeout > 0 {
		o.PublishTimeout = c.PublishTimeout
	}
	if c.RelayAge > 0 {
		o.RelayAge = c.RelayAge
	}
	return o
}

func (c OutboxConfig) relayEvery() time.Duration {
	if c.RelayEvery > 0 {
		return c.RelayEvery
	}
	return outbox.DefaultRelayEvery
}
