package builders

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/topics"
)

const group = "0b4e0b2c-6f5a-4b6c-9d8e-1f2a3b4c5d6e"

// handleInPolls feeds recs to f in polls of random sizes, as a consumer
// would receive them.
func handleInPolls(t *testing.T, f *Forwarder, recs []*kgo.Record, rng *rand.Rand) {
	t.Helper()
	for start := 0; start < len(recs); {
		end := min(len(recs), start+1+rng.IntN(8))
		if err := f.Handle(t.Context(), recs[start:end]); err != nil {
			t.Fatal(err)
		}
		start = end
	}
}

// TestReplacementRaceLatestWins sends many versions of one replacement
// group at once (some cases with cancellations among them) through the
// real searcher method and broker, then forwards the log in polls of
// random sizes. Whatever order the broker took them in, the outcome is
// the log's: the last record decides, in Postgres and at the builder, and
// two forwarders cutting the log differently end the same.
func TestReplacementRaceLatestWins(t *testing.T) {
	for _, tc := range []struct {
		name             string
		versions, cancel int
	}{
		{"versions only", 40, 0},
		{"versions and cancels", 30, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			producer, brokers := kafkatest.Start(t)
			methods := of.SearcherMethods{Rules: rules, Producer: producer}
			var wg sync.WaitGroup
			for i := range tc.versions + tc.cancel {
				wg.Go(func() {
					method, param := of.MethodSendBundle, map[string]any{"txs": []string{signed(t, i, 0)}, "replacementUuid": group}
					if i >= tc.versions {
						method, param = of.MethodCancelBundle, map[string]any{"replacementUuid": group}
					}
					raw, _ := json.Marshal(param)
					if _, err := methods.Call(t.Context(), searcher, jsonrpc.Request{ID: json.RawMessage("1"), Method: method, Param: raw}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			recs := readAll(t, brokers, topics.OrderflowBundles, tc.versions+tc.cancel)

			var outcomes []string
			for seed := range uint64(2) {
				b := newFakeBuilder(t)
				f, pool := newForwarder(t, b, 4)
				handleInPolls(t, f, recs, rand.New(rand.NewPCG(seed, 7)))
				outcomes = append(outcomes, checkLatestWins(t, recs, pool, b))
			}
			if outcomes[0] != outcomes[1] {
				t.Fatalf("two forwarders ended differently:\n%s\n%s", outcomes[0], outcomes[1])
			}
		})
	}
}

// checkLatestWins checks the outcome against the last record of the log
// and returns it as text.
func checkLatestWins(t *testing.T, recs []*kgo.Record, pool *pgxpool.Pool, b *fakeBuilder) string {
	t.Helper()
	last, err := decodeRecord(recs[len(recs)-1])
	if err != nil {
		t.Fatal(err)
	}
	got := statuses(t, pool, group)
	live := 0
	for h, s := range got {
		if s == topics.BundleReceived || s == topics.BundleForwarded {
			live++
			if last.sb.Cancel || h != strings.ToLower(last.sb.BundleHash) {
				t.Errorf("bundle %s is %s; the last record is %+v", h, s, last.sb)
			}
		}
	}
	checkLogOrder(t, recs, b)
	txs, held := b.group(group)
	if last.sb.Cancel {
		if live != 0 || held {
			t.Errorf("cancel last: %d live bundles, builder holds %v", live, txs)
		}
		return "cancelled"
	}
	if live != 1 || got[strings.ToLower(last.sb.BundleHash)] != topics.BundleForwarded {
		t.Errorf("latest %s: statuses %v", last.sb.BundleHash, got)
	}
	if !held || !slices.Equal(txs, []string{last.sb.Txs[0].Raw}) {
		t.Errorf("builder holds %v, want the latest version %s", txs, last.sb.Txs[0].Raw)
	}
	return last.sb.BundleHash
}

// checkLogOrder checks that the builder took the group's actions in log
// order: never a version older than one it already had, nor older than a
// cancellation it already took. A cancellation is matched to the earliest
// cancel record after the builder's position, the most lenient reading.
func checkLogOrder(t *testing.T, recs []*kgo.Record, b *fakeBuilder) {
	t.Helper()
	index := map[string]int{}
	var cancels []int
	for i, r := range recs {
		rec := mustDecode(t, r)
		if rec.sb.Cancel {
			cancels = append(cancels, i)
		} else {
			index[rec.sb.Txs[0].Raw] = i
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pos := -1
	for n, e := range b.events {
		if e != "cancel" {
			if index[e] <= pos {
				t.Fatalf("builder event %d is the version at log index %d after index %d", n, index[e], pos)
			}
			pos = index[e]
			continue
		}
		k := slices.IndexFunc(cancels, func(i int) bool { return i > pos })
		if k < 0 {
			t.Fatalf("builder event %d is a cancellation after log index %d, where no cancel follows", n, pos)
		}
		pos = cancels[k]
	}
}

// TestCancelAfterRaceIsNotLost: a cancellation that follows a burst of
// versions, even in the same poll, leaves nothing live anywhere.
func TestCancelAfterRaceIsNotLost(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 100)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, i, 0)}, "replacementUuid": group}))
	}
	if err := f.Handle(t.Context(), recs[:5]); err != nil {
		t.Fatal(err)
	}
	cancel := searcherRecord(t, of.MethodCancelBundle, map[string]any{"replacementUuid": group})
	if err := f.Handle(t.Context(), append(recs[5:], cancel)); err != nil {
		t.Fatal(err)
	}
	for h, s := range statuses(t, pool, group) {
		if s != topics.BundleReplaced && s != topics.BundleCancelled {
			t.Errorf("bundle %s is %s after the cancel", h, s)
		}
	}
	if txs, held := b.group(group); held {
		t.Errorf("builder still holds %v", txs)
	}
}

// TestResentVersionIsLiveAgain: A, then B, then A again: A is the live
// version, not lost to the row it already had.
func TestResentVersionIsLiveAgain(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 1)
	rawA, rawB := signed(t, 1, 0), signed(t, 2, 0)
	for _, raw := range []string{rawA, rawB, rawA} {
		r := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{raw}, "replacementUuid": group})
		if err := f.Handle(t.Context(), []*kgo.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	got := statuses(t, pool, group)
	hashA := strings.ToLower(keccakOf(t, rawA))
	if got[hashA] != topics.BundleForwarded || len(got) != 2 {
		t.Fatalf("statuses %v, want %s FORWARDED and the other REPLACED", got, hashA)
	}
	if txs, _ := b.group(group); !slices.Equal(txs, []string{rawA}) {
		t.Fatalf("builder holds %v", txs)
	}
}

// TestCancelUnknownGroup: cancelling a group never seen changes no row
// and is no error; the builders are told (they may know the group from
// elsewhere).
func TestCancelUnknownGroup(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 1)
	other := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 1, 0)}, "replacementUuid": group})
	if err := f.Handle(t.Context(), []*kgo.Record{other}); err != nil {
		t.Fatal(err)
	}
	unknown := "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"
	cancel := searcherRecord(t, of.MethodCancelBundle, map[string]any{"replacementUuid": unknown})
	if err := f.Handle(t.Context(), []*kgo.Record{cancel}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, pool, group); len(got) != 1 || !slices.Contains(mapsValues(got), topics.BundleForwarded) {
		t.Fatalf("another group changed: %v", got)
	}
	if got := statuses(t, pool, unknown); len(got) != 0 {
		t.Fatalf("rows for the unknown group: %v", got)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.cancels, []string{unknown}) {
		t.Fatalf("builder cancels %v", b.cancels)
	}
}

// TestBackrunInTheSamePoll: the originator transaction and its backrun
// arrive in one poll; the backrun is forwarded with the transaction's raw
// form and refund terms.
func TestBackrunInTheSamePoll(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 100)
	origin, backrun := signed(t, 1, 0), signed(t, 2, 0)
	refund := topics.RefundPolicy{Recipient: "0x00000000000000000000000000000000000000f1", Percent: 40}
	br := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{txHash(t, origin), backrun}, "replacementUuid": group})
	if err := f.Handle(t.Context(), []*kgo.Record{txRecordOf(t, origin, refund), br}); err != nil {
		t.Fatal(err)
	}
	bundleHash := mustDecode(t, br).sb.BundleHash
	if st, _ := bundleRow(t, pool, bundleHash); st != topics.BundleForwarded {
		t.Fatalf("backrun is %s", st)
	}
	if txs, _ := b.group(group); !slices.Equal(txs, []string{origin, backrun}) {
		t.Fatalf("builder holds %v", txs)
	}
}

// TestBackrunWaitsForItsTransaction: a backrun whose transaction comes in
// a later poll is forwarded then; one whose transaction never comes fails
// after BackrunWait, and meanwhile builders drop the group's older
// version.
func TestBackrunWaitsForItsTransaction(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 100)
	now := time.Unix(1_700_000_000, 0)
	f.now = func() time.Time { return now }
	origin, backrun := signed(t, 1, 0), signed(t, 2, 0)
	older := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{signed(t, 3, 0)}, "replacementUuid": group})
	br := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{txHash(t, origin), backrun}, "replacementUuid": group})
	if err := f.Handle(t.Context(), []*kgo.Record{older}); err != nil {
		t.Fatal(err)
	}
	if err := f.Handle(t.Context(), []*kgo.Record{br}); err != nil {
		t.Fatal(err)
	}
	hash := mustDecode(t, br).sb.BundleHash
	if st, _ := bundleRow(t, pool, hash); st != topics.BundleReceived {
		t.Fatalf("waiting backrun is %s", st)
	}
	if txs, held := b.group(group); held {
		t.Fatalf("builder still holds the older version %v", txs)
	}
	// Polls while it waits tell the builders nothing more.
	b.mu.Lock()
	cancels := len(b.cancels)
	b.mu.Unlock()
	for range 3 {
		if err := f.Handle(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	b.mu.Lock()
	if len(b.cancels) != cancels {
		t.Errorf("%d cancellations while the backrun waited, want %d", len(b.cancels), cancels)
	}
	b.mu.Unlock()
	now = now.Add(time.Second)
	if err := f.Handle(t.Context(), []*kgo.Record{txRecordOf(t, origin, topics.RefundPolicy{Percent: 90})}); err != nil {
		t.Fatal(err)
	}
	if st, _ := bundleRow(t, pool, hash); st != topics.BundleForwarded {
		t.Fatalf("backrun after its transaction is %s", st)
	}
	if txs, _ := b.group(group); !slices.Equal(txs, []string{origin, backrun}) {
		t.Fatalf("builder holds %v", txs)
	}

	// A backrun of a transaction nobody sent fails after the wait.
	lost := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{txHash(t, signed(t, 9, 0)), signed(t, 4, 0)}})
	if err := f.Handle(t.Context(), []*kgo.Record{lost}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(f.cfg.BackrunWait)
	if err := f.Handle(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	st, reason := bundleRow(t, pool, mustDecode(t, lost).sb.BundleHash)
	if st != topics.BundleFailed || !strings.Contains(reason, "never received") || len(f.waiting) != 0 {
		t.Fatalf("lost backrun: %s %q, %d waiting", st, reason, len(f.waiting))
	}
}

// TestBuilderBatchFailures: a builder that does not answer a batch with an
// array leaves every bundle of it unforwarded.
func TestBuilderBatchFailures(t *testing.T) {
	c := Client{URL: "http://127.0.0.1:1"} // nothing listens
	errs := c.SendBundles(t.Context(), []Bundle{{Txs: []string{"0x01"}}, {Txs: []string{"0x02"}}})
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Fatalf("errs %v", errs)
	}
}

func mustDecode(t *testing.T, r *kgo.Record) record {
	t.Helper()
	rec, err := decodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func keccakOf(t *testing.T, raw string) string {
	t.Helper()
	b, err := of.ParseBundle(json.RawMessage(fmt.Sprintf(`{"txs":[%q]}`, raw)), of.OriginatorBundle, rules)
	if err != nil {
		t.Fatal(err)
	}
	return b.Hash.Hex()
}

func mapsValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestOriginatorReplacementGroup: a partner originator's versions of a
// replacement group replace each other as a searcher's do, in Postgres
// and at the builder, across polls and within one, and a version sent
// again is live again; a searcher's version of the same account and uuid
// is the same group. On the open endpoint (no originator, refused by
// ingress) a uuid groups nothing.
func TestOriginatorReplacementGroup(t *testing.T) {
	b := newFakeBuilder(t)
	f, pool := newForwarder(t, b, 100)
	rawA, rawB, rawC, rawD := signed(t, 1, 0), signed(t, 2, 0), signed(t, 3, 0), signed(t, 4, 0)
	partner := searcher.Address // one account, both roles
	a, bv, c := originatorRecord(t, partner, group, rawA), originatorRecord(t, partner, group, rawB), originatorRecord(t, partner, group, rawC)
	handle(t, f, a)
	handle(t, f, bv, c)
	hashOf := func(r *kgo.Record) string { return strings.ToLower(mustDecode(t, r).ob.BundleHash) }
	want := map[string]string{hashOf(a): topics.BundleReplaced, hashOf(bv): topics.BundleReplaced, hashOf(c): topics.BundleForwarded}
	if got := statuses(t, pool, group); !maps.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if txs, _ := b.group(group); !slices.Equal(txs, []string{rawC}) {
		t.Fatalf("builder holds %v, want the last version", txs)
	}
	b.mu.Lock()
	events := slices.Clone(b.events)
	b.mu.Unlock()
	if slices.Contains(events, rawB) {
		t.Fatalf("builder took the version superseded in its poll: %v", events)
	}

	handle(t, f, originatorRecord(t, partner, group, rawA))
	if st, _ := bundleRow(t, pool, hashOf(a)); st != topics.BundleForwarded {
		t.Fatalf("version sent again is %s", st)
	}
	if st, _ := bundleRow(t, pool, hashOf(c)); st != topics.BundleReplaced {
		t.Fatalf("previous version is %s", st)
	}
	sv := searcherRecord(t, of.MethodSendBundle, map[string]any{"txs": []string{rawD}, "replacementUuid": group})
	handle(t, f, sv)
	if st, _ := bundleRow(t, pool, hashOf(a)); st != topics.BundleReplaced {
		t.Fatalf("originator version after the account's searcher version is %s", st)
	}

	other := "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"
	open1, open2 := originatorRecord(t, "", other, signed(t, 5, 0)), originatorRecord(t, "", other, signed(t, 6, 0))
	handle(t, f, open1, open2)
	for _, r := range []*kgo.Record{open1, open2} {
		if st, _ := bundleRow(t, pool, hashOf(r)); st != topics.BundleForwarded {
			t.Fatalf("open endpoint bundle with a uuid is %s", st)
		}
	}
	if txs, held := b.group(other); held {
		t.Fatalf("builder grouped open endpoint bundles: %v", txs)
	}
}

// The forwarder's client joins the group its configuration names, or
// DefaultGroup, and the forwarder says which.
func TestForwarderJoinsTheConfiguredGroup(t *testing.T) {
	for _, tc := range []struct{ configured, want string }{{"", DefaultGroup}, {"relay-b", "relay-b"}} {
		f := NewForwarder(Config{Group: tc.configured}, nil, nil, nil, slog.New(slog.DiscardHandler))
		cl, err := kgo.NewClient(append(f.ClientOpts(), kgo.SeedBrokers("127.0.0.1:1"))...)
		if err != nil {
			t.Fatal(err)
		}
		got := cl.OptValue(kgo.ConsumerGroup)
		cl.Close()
		if got != tc.want || f.Group() != tc.want {
			t.Errorf("Group %q: the client joins %v and the forwarder says %q, want %q", tc.configured, got, f.Group(), tc.want)
		}
	}
}
