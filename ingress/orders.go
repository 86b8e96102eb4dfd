package ingress

import (
	"time"

	"blockspace.exchange/ingress/internal/orderentry"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/environment"
	"blockspace.exchange/platform/outbox"
)

// OrderEntryConfig configures order entry (docs/api.md "Orders"). Zero
// values take the defaults.
type OrderEntryConfig struct {
	// MaxPlaceOrders bounds the orders of one place request
	// (ORDER_MAX_PER_REQUEST, 50, 1 to 1000).
	MaxPlaceOrders int
	// BatchWait is how long a batch waits for concurrent requests
	// (ORDER_BATCH_WAIT, 1ms, 1µs to 1s); BatchMax bounds a batch's orders
	// (ORDER_BATCH_MAX, 1000, 1 to 100000); Lanes is how many batches are
	// written at once (ORDER_LANES, 2, 1 to 64).
	BatchWait time.Duration
	BatchMax  int
	Lanes     int
	// AnswerWait is how long an answer waits for the matcher's decision
	// (ORDER_ANSWER_WAIT, 200ms, 0 to 5s; 0 answers at once, without it,
	// which the field holds as a negative value).
	AnswerWait time.Duration
}

// defaultOrders is OrderEntryConfig with no variable set: order entry's
// own defaults.
func defaultOrders() OrderEntryConfig {
	d := orderentry.DefaultConfig()
	return OrderEntryConfig{MaxPlaceOrders: d.MaxPlaceOrders, BatchWait: d.BatchWait, BatchMax: d.BatchMax,
		Lanes: d.Lanes, AnswerWait: d.AnswerWait}
}

// fromEnv reads the ORDER_* variables over o.
func (o OrderEntryConfig) fromEnv(r *config.Reader) OrderEntryConfig {
	o.MaxPlaceOrders = r.Int("ORDER_MAX_PER_REQUEST", o.MaxPlaceOrders, 1, 1000)
	o.BatchWait = r.Duration("ORDER_BATCH_WAIT", o.BatchWait, time.Microsecond, time.Second)
	o.BatchMax = r.Int("ORDER_BATCH_MAX", o.BatchMax, 1, 100_000)
	o.Lanes = r.Int("ORDER_LANES", o.Lanes, 1, 64)
	o.AnswerWait = r.Duration("ORDER_ANSWER_WAIT", max(o.AnswerWait, 0), 0, 5*time.Second)
	if o.AnswerWait == 0 {
		o.AnswerWait = -1 // never wait
	}
	return o
}

// entry is order entry's configuration in env.
func (o OrderEntryConfig) entry(env environment.Environment) orderentry.Config {
	return orderentry.Config{MaxPlaceOrders: o.MaxPlaceOrders, BatchWait: o.BatchWait, BatchMax: o.BatchMax,
		Lanes: o.Lanes, AnswerWait: o.AnswerWait, SlotLength: env.SlotLength}
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

// defaultOutbox is OutboxConfig with no variable set: the outbox's own
// defaults.
func defaultOutbox() OutboxConfig {
	return OutboxConfig{PublishTimeout: outbox.DefaultPublishTimeout, RelayAge: outbox.DefaultRelayAge, RelayEvery: outbox.DefaultRelayEvery}
}

// fromEnv reads OUTBOX_PUBLISH_TIMEOUT (10ms to 1m), OUTBOX_RELAY_AGE
// (10ms to 1h) and OUTBOX_RELAY_EVERY (10ms to 1m) over c.
func (c OutboxConfig) fromEnv(r *config.Reader) OutboxConfig {
	c.PublishTimeout = r.Duration("OUTBOX_PUBLISH_TIMEOUT", c.PublishTimeout, 10*time.Millisecond, time.Minute)
	c.RelayAge = r.Duration("OUTBOX_RELAY_AGE", c.RelayAge, 10*time.Millisecond, time.Hour)
	c.RelayEvery = r.Duration("OUTBOX_RELAY_EVERY", c.RelayEvery, 10*time.Millisecond, time.Minute)
	return c
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
