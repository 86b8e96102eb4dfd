// Package kafkatest holds helpers for tests that read what a service
// published to a real Kafka-protocol broker.
package kafkatest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
)

// ReadToEnd returns every record of topic below the end offsets the broker
// lists when it is called, partition by partition, reading with a client
// of its own that reaches the brokers as cl does. Reading up to listed
// offsets, rather than until the broker goes quiet, cannot end early on a
// slow fetch. The topic must be written without transactions: every
// offset below the end then holds a record.
func ReadToEnd(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	// Asking for authorized operations bypasses the client's metadata
	// cache, which may still hold the topic as unknown from before it was
	// created.
	ends, err := kadm.NewClient(cl).ListEndOffsets(kadm.WithAuthorizedOps(ctx), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			from[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil
	}
	reader, err := kafka.NewReader(cl, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %v; partitions short of their end: %v", topic, ctx.Err(), want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				out = append(out, r)
				if r.Offset+1 >= end {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out
}
