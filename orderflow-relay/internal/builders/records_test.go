package builders

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// withValue returns r with its value's first old replaced by new.
func withValue(r *kgo.Record, old, new string) *kgo.Record {
	c := *r
	c.Value = bytes.Replace(r.Value, []byte(old), []byte(new), 1)
	return &c
}

// unstorable are records that pass every other check but that Postgres
// refuses to store, each with the words its refusal must hold.
func unstorable(t *testing.T) map[string]struct {
	rec  *kgo.Record
	want string
} {
	tx := func(n int, p int) *kgo.Record { return txRecordOf(t, signed(t, n, 0), topics.RefundPolicy{Percent: p}) }
	bundle := originatorRecord(t, "", "", signed(t, 9, 0))
	return map[string]struct {
		rec  *kgo.Record
		want string
	}{
		"refund percent 100":          {tx(1, 100), "refund percent 100 is not in 0..99"},
		"refund percent -1":           {tx(2, -1), "refund percent -1 is not in 0..99"},
		"bundle refund percent 100":   {withValue(bundle, `"percent":90`, `"percent":100`), "refund percent 100 is not in 0..99"},
		"NUL in the method":           {withValue(tx(3, 90), `"eth_sendRawTransaction"`, `"eth_send\u0000"`), "NUL character"},
		"NUL in a bundle's decoded":   {withValue(bundle, `"data":"0x"`, `"data":"0x\u0000"`), "NUL character"},
		"NUL in the decoded":          {withValue(tx(4, 90), `"data":"0x"`, `"data":"0x\u0000"`), "not printable ASCII"},
		"lone surrogate in decoded":   {withValue(tx(5, 90), `"data":"0x"`, `"data":"0x\ud800"`), "not printable ASCII"},
		"invalid UTF-8 in decoded":    {withValue(tx(6, 90), `"data":"0x"`, "\"data\":\"0x\xff\""), "not printable ASCII"},
		"huge number in decoded":      {withValue(tx(7, 90), `"data":"0x"`, `"data":"0x","n":1e1000000`), "not a plain integer"},
		"long integer in decoded":     {withValue(tx(8, 90), `"data":"0x"`, `"data":"0x","n":`+strings.Repeat("9", 200000)), "not a plain integer"},
		"fraction in decoded":         {withValue(tx(10, 90), `"data":"0x"`, `"data":"0x","n":0.5`), "not a plain integer"},
		"NUL in a searcher's uuid":    {withValue(searcherRecord(t, "eth_cancelBundle", map[string]any{"replacementUuid": group}), `"replacementUuid":"`, `"replacementUuid":"\u0000`), "NUL character"},
		"NUL after an escaped escape": {withValue(tx(11, 90), `"eth_sendRawTransaction"`, `"\\\u0000"`), "NUL character"},
	}
}

// TestDecodeRecordRefusesWhatPostgresCannotStore: a record the poll's
// transaction could not store is refused by the decoder, which the
// forwarder skips, with the reason.
func TestDecodeRecordRefusesWhatPostgresCannotStore(t *testing.T) {
	for name, tc := range unstorable(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeRecord(tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeRecord: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	escaped := withValue(txRecordOf(t, signed(t, 12, 0), topics.RefundPolicy{Percent: 90}), `"eth_sendRawTransaction"`, `"eth_send\\u0000"`)
	if _, err := decodeRecord(escaped); err != nil {
		t.Fatalf("a backslash followed by u0000 is no NUL: %v", err)
	}
}

// TestUnstorableRecordsDoNotHoldTheForwarder: a poll holding records
// Postgres refuses stores and forwards the others; the refused ones
// failed the poll's transaction at every retry, and Run retried it for
// ever.
func TestUnstorableRecordsDoNotHoldTheForwarder(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 100)
	var recs []*kgo.Record
	for _, tc := range unstorable(t) {
		recs = append(recs, tc.rec)
	}
	good := signed(t, 20, 0)
	recs = append(recs, txRecordOf(t, good, topics.RefundPolicy{Percent: 90}))
	if err := f.Handle(t.Context(), recs); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM orderflow_txs WHERE hash = $1`, txHash(t, good)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the good transaction stored %d times, %v", n, err)
	}
}

// TestDecodeRecordReadsBothReceivedAtUnits: a submission of version 1
// (receivedAt in UNIX nanoseconds, still in the log after an upgrade) and
// one of version 2 (milliseconds) that name the same instant are read as
// that instant; a version this relay does not know is refused.
func TestDecodeRecordReadsBothReceivedAtUnits(t *testing.T) {
	at := time.UnixMilli(1_795_763_400_087)
	for _, tc := range []struct {
		name       string
		version    int
		receivedAt int64
	}{
		{"version 1, nanoseconds", 1, at.UnixNano()},
		{"version 2, milliseconds", 2, at.UnixMilli()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for typ, r := range map[string]*kgo.Record{
				topics.TypeOrderflowTx:               txRecordOf(t, signed(t, 30, 0), topics.RefundPolicy{Percent: 90}),
				topics.TypeOrderflowOriginatorBundle: originatorRecord(t, "", "", signed(t, 31, 0)),
				topics.TypeOrderflowSearcherBundle:   searcherRecord(t, "eth_cancelBundle", map[string]any{"replacementUuid": group}),
			} {
				rec, err := decodeRecord(receivedAtOf(t, r, tc.version, tc.receivedAt))
				if err != nil || !rec.received.Equal(at) {
					t.Fatalf("%s: received %v (%v), want %v", typ, rec.received, err, at)
				}
			}
		})
	}
	r := receivedAtOf(t, txRecordOf(t, signed(t, 32, 0), topics.RefundPolicy{Percent: 90}), 3, at.UnixMilli())
	if _, err := decodeRecord(r); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("version 3: %v, want it refused", err)
	}
}

// receivedAtOf returns r as written with payload version and receivedAt.
func receivedAtOf(t *testing.T, r *kgo.Record, version int, receivedAt int64) *kgo.Record {
	t.Helper()
	c := *r
	c.Value = regexp.MustCompile(`"receivedAt":\d+`).ReplaceAll(r.Value, []byte(`"receivedAt":`+strconv.FormatInt(receivedAt, 10)))
	c.Value = bytes.Replace(c.Value, []byte(`"version":2`), []byte(`"version":`+strconv.Itoa(version)), 1)
	c.Headers = []kgo.RecordHeader{{Key: topics.HeaderType, Value: kafkaHeader(r, topics.HeaderType)},
		{Key: topics.HeaderVersion, Value: []byte(strconv.Itoa(version))}}
	if bytes.Equal(c.Value, r.Value) {
		t.Fatalf("record %s has no receivedAt to replace", r.Value)
	}
	return &c
}

// kafkaHeader returns the value of r's header key.
func kafkaHeader(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}
