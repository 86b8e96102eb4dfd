package orderflow

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

type recorder struct{ recs []*kgo.Record }

func (r *recorder) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	r.recs = append(r.recs, rs...)
	return kgo.ProduceResults{{Record: rs[0]}}
}

// TestPublishTxIsPublish: the fast path writes the very record Publish
// writes: same topic, key, headers and bytes.
func TestPublishTxIsPublish(t *testing.T) {
	tx, err := DecodeRawTx(sign(t, testChain, dynamicTx(3)), testRules())
	if err != nil {
		t.Fatal(err)
	}
	m := topics.OrderflowTx{Hash: tx.Hash.Hex(), Raw: tx.Raw, Tx: tx.Decoded, Originator: "0xab",
		Refund: topics.RefundPolicy{Recipient: "0xcd", Percent: 42}, Method: "eth_sendRawTransaction", ReceivedAt: 123}
	at := time.UnixMilli(1_700_000_000_000)
	fast := &recorder{}
	if err := PublishTx(context.Background(), fast, &m, at); err != nil {
		t.Fatal(err)
	}
	e, err := topics.NewEnvelope(topics.TypeOrderflowTx, topics.OrderflowSubmissionVersion, "tx-"+m.Hash, at, m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := kafka.NewRecord(topics.OrderflowTxs, []byte(m.Hash), e)
	if err != nil {
		t.Fatal(err)
	}
	got := fast.recs[0]
	if got.Topic != want.Topic || !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) || len(got.Headers) != len(want.Headers) {
		t.Fatalf("got %s %s\n%s\nwant %s %s\n%s", got.Topic, got.Key, got.Value, want.Topic, want.Key, want.Value)
	}
	for i := range got.Headers {
		if got.Headers[i].Key != want.Headers[i].Key || !bytes.Equal(got.Headers[i].Value, want.Headers[i].Value) {
			t.Fatalf("header %d: %v, want %v", i, got.Headers[i], want.Headers[i])
		}
	}
	if _, err := topics.Decode(got.Value); err != nil {
		t.Fatal(err)
	}
}
