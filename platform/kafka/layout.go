package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"blockspace.exchange/topics"
)

// ReadLayouts reads the SlotLayouts topic to its end and returns the newest
// layout of each family. A family without a record there uses
// topics.DefaultLayout; Layout does that lookup.
//
// It reads with a short-lived client of its own, dialling the brokers of cl
// the same way (TLS, SASL, dialer), so the caller's client keeps its
// consumer state.
func ReadLayouts(ctx context.Context, cl *kgo.Client) (map[string]topics.SlotLayout, error) {
	end, err := layoutsEnd(ctx, kadm.NewClient(cl))
	if err != nil {
		return nil, err
	}
	layouts := make(map[string]topics.SlotLayout)
	if end == 0 {
		return layouts, nil
	}
	reader, err := kgo.NewClient(append(dialOpts(cl),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topics.SlotLayouts: {0: kgo.NewOffset().AtStart()},
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("read layouts: %w", err)
	}
	defer reader.Close()
	if err := readLayoutsUntil(ctx, reader, end, layouts); err != nil {
		return nil, err
	}
	return layouts, nil
}

// Layout returns the current layout of one family: the newest record, or
// the catalog default when none was published.
func Layout(ctx context.Context, cl *kgo.Client, family string) (topics.SlotLayout, error) {
	layouts, err := ReadLayouts(ctx, cl)
	if err != nil {
		return topics.SlotLayout{}, err
	}
	if l, ok := layouts[family]; ok {
		return l, nil
	}
	return topics.DefaultLayout(family)
}

func layoutsEnd(ctx context.Context, adm *kadm.Client) (int64, error) {
	// Like listFresh: a cached "unknown topic" must not hide a topic that
	// EnsureTopics created moments ago.
	ends, err := adm.ListEndOffsets(kadm.WithAuthorizedOps(ctx), topics.SlotLayouts)
	if err != nil {
		return 0, fmt.Errorf("read layouts: end offset: %w", err)
	}
	o, ok := ends.Lookup(topics.SlotLayouts, 0)
	if !ok {
		return 0, fmt.Errorf("read layouts: topic %s has no partition 0; run topicctl apply", topics.SlotLayouts)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("read layouts: end offset: %w", o.Err)
	}
	return o.Offset, nil
}

// readLayoutsUntil consumes until it has seen the record before end. The
// topic is compacted, but the newest record is the newest of its key and so
// is never compacted away.
func readLayoutsUntil(ctx context.Context, reader *kgo.Client, end int64, into map[string]topics.SlotLayout) error {
	for {
		fetches := reader.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			return fmt.Errorf("read layouts: %w", err)
		}
		var last int64 = -1
		var decodeErr error
		fetches.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if decodeErr == nil {
				decodeErr = applyLayoutRecord(r, into)
			}
		})
		if decodeErr != nil {
			return decodeErr
		}
		if last >= end-1 {
			return nil
		}
	}
}

func applyLayoutRecord(r *kgo.Record, into map[string]topics.SlotLayout) error {
	if r.Value == nil {
		delete(into, string(r.Key))
		return nil
	}
	e, err := DecodeRecord(r)
	if err != nil {
		return fmt.Errorf("read layouts: %w", err)
	}
	l, err := topics.DecodeLayout(e)
	if err != nil {
		return fmt.Errorf("read layouts: offset %d: %w", r.Offset, err)
	}
	into[l.Topic] = l
	return nil
}

// dialOpts copies how cl reaches its brokers, and nothing else: no hooks
// (metrics would register twice), no group, no transactional id.
func dialOpts(cl *kgo.Client) []kgo.Opt {
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if id, _ := cl.OptValue(kgo.ClientID).(string); id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	if tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config); tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	} else if dial, _ := cl.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error)); dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	if mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism); len(mechs) > 0 {
		opts = append(opts, kgo.SASL(mechs...))
	}
	return opts
}

// PublishLayout writes l as the newest layout of its family and waits for
// the broker's acknowledgement.
func PublishLayout(ctx context.Context, producer *kgo.Client, l topics.SlotLayout) error {
	e, err := topics.LayoutEnvelope(l, time.Now())
	if err != nil {
		return fmt.Errorf("publish layout: %w", err)
	}
	r, err := NewRecord(topics.SlotLayouts, topics.LayoutKey(l.Topic), e)
	if err != nil {
		return fmt.Errorf("publish layout: %w", err)
	}
	r.Partition = 0
	if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("publish layout %s: %w", l.Topic, err)
	}
	return nil
}
