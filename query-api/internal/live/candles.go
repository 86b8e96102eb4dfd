package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"blockspace.exchange/platform/api"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/query-api/internal/tradingreads"
	"blockspace.exchange/topics"
)

// CandleReader reads the candles of a family (tradingreads.Candles).
type CandleReader interface {
	Interval(name string) (tradingreads.Interval, bool)
	Read(ctx context.Context, f topics.Family, iv tradingreads.Interval, from, to int64) ([]api.Candle, error)
}

// snapshotCandles is how many intervals a candles snapshot covers.
const snapshotCandles = 100

// CandlesPush is the payload of a candles push: a snapshot carries
// Candles, an update or a close one Candle. Seq counts the pushes of the
// stream (family and interval), as an order book's seq counts its
// updates.
type CandlesPush struct {
	MarketType string       `json:"marketType"`
	Interval   string       `json:"interval"`
	Seq        uint64       `json:"seq"`
	Candles    []api.Candle `json:"candles,omitempty"`
	Candle     *api.Candle  `json:"candle,omitempty"`
}

// Actions of candles pushes beyond snapshot and update.
const actionClose = "close"

// candleStream is the candles of one family and interval as its
// subscribers have been told them. Its lock is held across a read of
// Postgres and the pushes made from it, and across a subscriber's
// snapshot and its registration, so that every push a subscriber gets
// after its snapshot was read after the snapshot.
type candleStream struct {
	mu     sync.Mutex
	key    subKey
	iv     tradingreads.Interval
	seq    uint64
	final  int64            // intervals starting before it are closed and pushed as such; 0 before the first poll
	open   map[int64][]byte // encoded candles of the open intervals, by openTime
	active bool             // polled since it last had no subscriber
}

// candleStreams holds a stream per family and interval.
type candleStreams struct {
	reader CandleReader
	hub    *Hub
	grace  time.Duration
	now    func() time.Time
	byKey  map[subKey]*candleStream
}

func newCandleStreams(reader CandleReader, hub *Hub, grace time.Duration, now func() time.Time) *candleStreams {
	c := &candleStreams{reader: reader, hub: hub, grace: grace, now: now, byKey: map[subKey]*candleStream{}}
	if reader == nil {
		return c
	}
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		for _, name := range tradingreads.IntervalNames {
			iv, _ := reader.Interval(name)
			k := subKey{channel: ChannelCandles, family: f, interval: name}
			c.byKey[k] = &candleStream{key: k, iv: iv, open: map[int64][]byte{}}
		}
	}
	return c
}

// subscribeCandles registers a candles subscription and queues its snapshot:
// the candles of the last snapshotCandles intervals up to now.
func (s *Server) subscribeCandles(sock *socket, a Arg) {
	st := s.candles.byKey[keyOf(a)]
	if st == nil {
		sock.send(errorReply(&protoError{code: httpx.CodeUnavailable, op: OpSubscribe, arg: &a, msg: "candles are not available on this server"}))
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := s.cfg.Now().UnixMilli()
	s.candles.activate(st, now)
	to := st.iv.Floor(now) + st.iv.Width
	candles, err := s.candles.reader.Read(ctx, a.Family, st.iv, to-snapshotCandles*st.iv.Width, to)
	if err != nil {
		s.deps.Logger.Warn("live: candles snapshot", "error", err)
		sock.send(errorReply(&protoError{code: httpx.CodeUnavailable, op: OpSubscribe, arg: &a, msg: "candles cannot be read now; retry"}))
		return
	}
	s.addSubscription(sock, a, func() {
		sock.send(encode(push{Channel: ChannelCandles, Time: now, Action: actionSnapshot,
			Payload: CandlesPush{MarketType: a.MarketType, Interval: a.Interval, Seq: st.seq, Candles: candles}}))
	})
}

// poll reads the newest candles of every stream with a subscriber and
// pushes what changed. An interval is closed once grace has passed after
// its end, time for the settler to write its last trades: its candle, if
// it has one, is pushed once more with action close and never again. A
// stream whose read failed is read again at the next poll.
func (c *candleStreams) poll(ctx context.Context) error {
	var errs []error
	for _, st := range c.byKey {
		if err := c.pollStream(ctx, st); err != nil {
			errs = append(errs, fmt.Errorf("candles %s %s: %w", marketType(st.key.family), st.iv.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *candleStreams) pollStream(ctx context.Context, st *candleStream) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if c.hub.subscribers(st.key) == 0 {
		st.active = false
		return nil
	}
	now := c.now().UnixMilli()
	c.activate(st, now)
	final := st.iv.Floor(now - c.grace.Milliseconds())
	from := max(st.final, final-snapshotCandles*st.iv.Width) // bounded after a long outage
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	candles, err := c.reader.Read(ctx, st.key.family, st.iv, from, st.iv.Floor(now)+st.iv.Width)
	if err != nil {
		return err
	}
	for i := range candles {
		k := &candles[i]
		enc := encode(k)
		action := actionUpdate
		if k.OpenTime < final {
			action = actionClose
		} else if bytes.Equal(st.open[k.OpenTime], enc) {
			continue
		}
		st.open[k.OpenTime] = enc
		c.push(st, action, k, now)
	}
	for t := range st.open {
		if t < final {
			delete(st.open, t)
		}
	}
	st.final = final
	return nil
}

// activate starts a stream that had no subscriber: the intervals closed
// by now are in every snapshot from now on, so only later ones are closed
// by pushes. Called with the stream's lock held.
func (c *candleStreams) activate(st *candleStream, now int64) {
	if !st.active {
		st.active, st.final, st.open = true, st.iv.Floor(now-c.grace.Milliseconds()), map[int64][]byte{}
	}
}

func (c *candleStreams) push(st *candleStream, action string, k *api.Candle, now int64) {
	st.seq++
	c.hub.publishKey(st.key, encode(push{Channel: ChannelCandles, Time: now, Action: action,
		Payload: CandlesPush{MarketType: marketType(st.key.family), Interval: st.iv.Name, Seq: st.seq, Candle: k}}))
}
