package live

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// AccountFeed pushes the settler's account feed (account-events) to the
// sockets of the account's owner: balances, posted transactions and
// positions. It reads from the end of the topic, outside any consumer
// group: a live view needs what changes from now on, and the queries and
// REST reads give the state before.
//
// The feed is at least once (docs/topics.md "Account feed"): a record may
// come twice, and two settler consumers may publish a user's states out
// of order. The feed drops ids it has seen and, per balance and per
// position, states older than the newest it pushed.
type AccountFeed struct {
	cl    *kgo.Client
	hub   *Hub
	log   *slog.Logger
	dedup accountDedup
	lag   *kafka.Lag // group label: the client id
}

// accountChannels maps the feed's types to channels and push actions.
var accountChannels = map[string]struct{ channel, action string }{
	topics.TypeBalanceChanged:    {ChannelBalances, "balance"},
	topics.TypeTransactionPosted: {ChannelTransactions, "transaction"},
	topics.TypePositionChanged:   {ChannelPositions, "position"},
}

// NewAccountFeed returns a feed of account-events into hub.
func NewAccountFeed(cfg kafka.Config, hub *Hub, log *slog.Logger) (*AccountFeed, error) {
	cl, err := kafka.NewClient(cfg, kgo.ConsumeTopics(topics.AccountEvents),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		return nil, fmt.Errorf("account feed: %w", err)
	}
	lag := kafka.NewLag(cfg.ClientID)
	lag.ListWith(cl)
	return &AccountFeed{cl: cl, hub: hub, log: log, dedup: newAccountDedup(), lag: lag}, nil
}

// Lag returns the feed's consumer metrics, to register.
func (f *AccountFeed) Lag() *kafka.Lag { return f.lag }

// Run pushes records until ctx ends, then closes the client.
func (f *AccountFeed) Run(ctx context.Context) error {
	defer f.cl.Close()
	for {
		fetches := f.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fetches.EachError(func(topic string, p int32, err error) {
			f.log.Warn("account feed: fetch", "topic", topic, "partition", p, "error", err)
		})
		fetches.EachRecord(f.apply)
		f.lag.Applied(fetches.Records())
	}
}

func (f *AccountFeed) apply(r *kgo.Record) {
	typ, _, ok := kafka.RecordType(r)
	route, known := accountChannels[typ]
	if !ok || !known {
		return
	}
	user, err := strconv.ParseInt(string(r.Key), 10, 64)
	if err != nil || user <= 0 {
		f.log.Warn("account feed: record key is not a user id", "partition", r.Partition, "offset", r.Offset)
		return
	}
	if !f.hub.anyUser(user, route.channel) {
		return // nobody of this user listens: skip decoding
	}
	e, err := kafka.DecodeRecord(r)
	if err == nil {
		err = f.push(user, route.channel, route.action, e)
	}
	if err != nil {
		f.log.Warn("account feed: skip record", "partition", r.Partition, "offset", r.Offset, "error", err)
	}
}

// push decodes one feed record and queues it for its owner. A record
// whose payload names another user than its key is dropped: the key
// routes, and both must agree before anything is shown.
func (f *AccountFeed) push(user int64, channel, action string, e topics.Envelope) error {
	var (
		owner      int64
		instrument string
		payload    any
		family     topics.Family
		fresh      func() bool // asked only once the owner is known to match
	)
	switch e.Type {
	case topics.TypeBalanceChanged:
		b, err := topics.DecodeBalanceChanged(e)
		if err != nil {
			return err
		}
		owner, payload = b.UserID, b
		fresh = func() bool { return f.dedup.newer(balanceKey{b.AccountID, b.TokenID}, b.Version) }
	case topics.TypeTransactionPosted:
		p, err := topics.DecodeTransactionPosted(e)
		if err != nil {
			return err
		}
		owner, payload = p.UserID, p
		fresh = func() bool { return f.dedup.firstPosting(p.TrxID) }
	case topics.TypePositionChanged:
		p, err := topics.DecodePositionChanged(e)
		if err != nil {
			return err
		}
		fam, _, err := topics.ParseInstrumentID(p.InstrumentID)
		if err != nil {
			return err
		}
		owner, payload, instrument, family = p.UserID, p, p.InstrumentID, fam
		fresh = func() bool { return f.dedup.newer(positionKey{p.AccountID, p.InstrumentID}, p.Version) }
	}
	if owner != user {
		return fmt.Errorf("%s %s: payload user %d, key user %d", e.Type, e.ID, owner, user)
	}
	if fresh() {
		f.hub.publishUser(user, channel, family, instrument,
			encode(push{Channel: channel, Time: e.Time, Instrument: instrument, Action: action, Payload: payload}))
	}
	return nil
}

type balanceKey struct{ account, token int64 }

type positionKey struct {
	account    int64
	instrument string
}

// accountDedup remembers, within bounds, the newest version pushed per
// balance and position and the postings pushed. Only the feed's goroutine
// uses it.
type accountDedup struct {
	versions map[any]int64
	postings map[int64]bool
	order    []int64 // postings in the order seen, for eviction
}

// dedupLimit bounds each memory; past it the oldest half is forgotten,
// which at worst lets a very late duplicate through.
const dedupLimit = 100_000

func newAccountDedup() accountDedup {
	return accountDedup{versions: make(map[any]int64), postings: make(map[int64]bool)}
}

func (d *accountDedup) newer(key any, version int64) bool {
	if v, ok := d.versions[key]; ok && v >= version {
		return false
	}
	if len(d.versions) >= dedupLimit {
		clear(d.versions)
	}
	d.versions[key] = version
	return true
}

func (d *accountDedup) firstPosting(trx int64) bool {
	if d.postings[trx] {
		return false
	}
	if len(d.order) >= dedupLimit {
		for _, old := range d.order[:dedupLimit/2] {
			delete(d.postings, old)
		}
		d.order = append(d.order[:0], d.order[dedupLimit/2:]...)
	}
	d.postings[trx] = true
	d.order = append(d.order, trx)
	return true
}
