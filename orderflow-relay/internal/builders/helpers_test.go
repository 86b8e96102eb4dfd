package builders

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

var (
	chainID  = big.NewInt(1337)
	rules    = of.Rules{ChainID: chainID}
	searcher = of.Identity{Address: "0x00000000000000000000000000000000000000c1", Roles: []string{of.RoleSearcher}}
)

// signed returns a distinct signed transaction of key n with nonce.
func signed(t testing.TB, n int, nonce uint64) string {
	t.Helper()
	key, err := crypto.ToECDSA(common.LeftPadBytes(big.NewInt(int64(1000+n)).Bytes(), 32))
	if err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tx.MarshalBinary()
	return hexutil.Encode(b)
}

func txHash(t testing.TB, raw string) string {
	t.Helper()
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(hexutil.MustDecode(raw)); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(tx.Hash().Hex())
}

// readAll reads n records of topic from its start, in log order within
// each partition.
func readAll(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		out = append(out, f.Records()...)
	}
	return out
}

// txRecord returns the record ingress publishes for an originator
// transaction.
func txRecordOf(t testing.TB, raw string, refund topics.RefundPolicy) *kgo.Record {
	t.Helper()
	tx, err := of.DecodeRawTx(raw, rules)
	if err != nil {
		t.Fatal(err)
	}
	m := topics.OrderflowTx{Hash: tx.Hash.Hex(), Raw: tx.Raw, Tx: tx.Decoded, Refund: refund, Method: "eth_sendRawTransaction", ReceivedAt: time.Now().UnixMilli()}
	return newRecord(t, topics.OrderflowTxs, topics.TypeOrderflowTx, "tx-"+m.Hash, m.Hash, m)
}

func newRecord(t testing.TB, topic, typ, id, key string, payload any) *kgo.Record {
	t.Helper()
	e, err := topics.NewEnvelope(typ, topics.OrderflowSubmissionVersion, id, time.Now(), payload)
	if err != nil {
		t.Fatal(err)
	}
	r, err := kafka.NewRecord(topic, []byte(key), e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// originatorRecord returns the record ingress publishes for a bundle of
// raws from originator ("" on the open endpoint), with uuid if set.
func originatorRecord(t testing.TB, originator, uuid string, raws ...string) *kgo.Record {
	t.Helper()
	param, _ := json.Marshal(map[string]any{"txs": raws})
	b, err := of.ParseBundle(param, of.OriginatorBundle, rules)
	if err != nil {
		t.Fatal(err)
	}
	m := topics.OrderflowOriginatorBundle{BundleHash: b.Hash.Hex(), ReplacementUUID: uuid, Originator: originator,
		Refund: topics.RefundPolicy{Recipient: b.Txs[0].Tx.Decoded.From, Percent: 90}, ReceivedAt: time.Now().UnixMilli()}
	for _, it := range b.Txs {
		m.Txs = append(m.Txs, it.Wire())
	}
	key := m.BundleHash
	if uuid != "" {
		key = originator + "/" + uuid
	}
	return newRecord(t, topics.OrderflowBundles, topics.TypeOrderflowOriginatorBundle, "obundle-"+of.NewSubmissionID(), key, m)
}

// capture is a Producer that keeps the records a searcher method publishes,
// for tests that do not need the log's order.
type capture struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

func (c *capture) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, rs...)
	out := make(kgo.ProduceResults, len(rs))
	for i, r := range rs {
		out[i] = kgo.ProduceResult{Record: r}
	}
	return out
}

// searcherRecord returns the record of one searcher request.
func searcherRecord(t testing.TB, method string, param any) *kgo.Record {
	t.Helper()
	c := &capture{}
	raw, _ := json.Marshal(param)
	if _, err := (of.SearcherMethods{Rules: rules, Producer: c}).Call(context.Background(), searcher, jsonrpc.Request{ID: json.RawMessage("1"), Method: method, Param: raw}); err != nil {
		t.Fatal(err)
	}
	return c.recs[0]
}

// fakeBuilder is a builder's eth_sendBundle/eth_cancelBundle endpoint
// that applies replacement like builders do: a bundle with a
// replacementUuid replaces the group's bundle, a cancellation drops it.
type fakeBuilder struct {
	srv *httptest.Server

	mu      sync.Mutex // guards the fields below
	groups  map[string][]string
	loose   [][]string
	cancels []string
	// down is how many of the next requests are refused (HTTP 503);
	// refuse how many of the next are answered with a JSON-RPC error;
	// requests counts every request, refused or not.
	down, refuse, requests int
	// events are the group actions in the order the builder took them:
	// the first transaction of a version, or "cancel".
	events []string
}

func newFakeBuilder(t *testing.T) *fakeBuilder {
	b := &fakeBuilder{groups: map[string][]string{}}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

type fakeReq struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params []Bundle        `json:"params"`
}

func (b *fakeBuilder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var reqs []fakeReq
	batch := len(body) > 0 && body[0] == '['
	if batch {
		_ = json.Unmarshal(body, &reqs)
	} else {
		var one fakeReq
		_ = json.Unmarshal(body, &one)
		reqs = []fakeReq{one}
	}
	var out []map[string]any
	b.mu.Lock()
	b.requests++
	if b.down > 0 {
		b.down--
		b.mu.Unlock()
		http.Error(w, "builder unavailable", http.StatusServiceUnavailable)
		return
	}
	if b.refuse > 0 {
		b.refuse--
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"bundle refused"}}`))
		return
	}
	for _, q := range reqs {
		p := q.Params[0]
		switch q.Method {
		case "eth_sendBundle":
			if p.ReplacementUUID != "" {
				b.groups[p.ReplacementUUID] = p.Txs
				b.events = append(b.events, p.Txs[0])
			} else {
				b.loose = append(b.loose, p.Txs)
			}
		case "eth_cancelBundle":
			b.cancels = append(b.cancels, p.ReplacementUUID)
			b.events = append(b.events, "cancel")
			delete(b.groups, p.ReplacementUUID)
		}
		out = append(out, map[string]any{"jsonrpc": "2.0", "id": q.ID, "result": map[string]string{"bundleHash": "0x01"}})
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	_ = json.NewEncoder(w).Encode(out[0])
}

// sent counts the bundles outside replacement groups the builder took
// with exactly txs.
func (b *fakeBuilder) sent(txs ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, l := range b.loose {
		if slices.Equal(l, txs) {
			n++
		}
	}
	return n
}

// setDown makes the builder refuse its next n requests.
func (b *fakeBuilder) setDown(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = n
}

// setRefuse makes the builder answer its next n requests with a JSON-RPC
// error.
func (b *fakeBuilder) setRefuse(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refuse = n
}

func (b *fakeBuilder) hits() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

func (b *fakeBuilder) group(uuid string) ([]string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	txs, ok := b.groups[uuid]
	return txs, ok
}

// newForwarder returns a forwarder on a fresh database to b.
func newForwarder(t *testing.T, b *fakeBuilder, batch int) (*Forwarder, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.New(t, schema.Migrations())
	return forwarderOn(pool, Config{Batch: batch}, b), pool
}

// forwarderOn returns a forwarder on pool to the builders bs that keeps
// no status events.
func forwarderOn(pool *pgxpool.Pool, cfg Config, bs ...*fakeBuilder) *Forwarder {
	return forwarderTo(pool, cfg, nil, bs...)
}

// forwarderTo returns a forwarder on pool to the builders bs that keeps
// its status events in out.
func forwarderTo(pool *pgxpool.Pool, cfg Config, out *outbox.Outbox, bs ...*fakeBuilder) *Forwarder {
	urls := make([]string, len(bs))
	for i, b := range bs {
		urls[i] = b.srv.URL
	}
	return NewForwarder(cfg, pool, urls, out, quiet)
}

// quiet is the logger of the forwarders and outboxes under test.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// running is a forwarder running in the consumer group.
type running struct {
	t      *testing.T
	cl     *kgo.Client
	stop   context.CancelFunc
	done   chan error // what Run returned
	closed sync.Once
}

// start runs f in the group on the broker until the test ends or Close.
func start(t *testing.T, f *Forwarder, brokers []string) *running {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{Brokers: brokers}, f.ClientOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, cl: cl, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- f.Run(ctx, cl) }()
	t.Cleanup(r.Close)
	return r
}

// Close stops the forwarder and leaves the group, as a shutdown does; an
// error Run returned fails the test.
func (r *running) Close() {
	r.closed.Do(func() {
		r.stop()
		if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
			r.t.Errorf("forwarder Run: %v", err)
		}
		r.cl.Close()
	})
}

// produce writes recs to the broker.
func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// statuses returns the status of every bundle of the group by hash.
func statuses(t *testing.T, pool *pgxpool.Pool, uuid string) map[string]string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT bundle_hash, status FROM orderflow_bundles WHERE replacement_uuid = $1`, uuid)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var h, s string
		if err := rows.Scan(&h, &s); err != nil {
			t.Fatal(err)
		}
		out[h] = s
	}
	return out
}

func bundleRow(t *testing.T, pool *pgxpool.Pool, hash string) (status, reason string) {
	t.Helper()
	err := pool.QueryRow(t.Context(), `SELECT status, reason FROM orderflow_bundles WHERE bundle_hash = $1`, strings.ToLower(hash)).Scan(&status, &reason)
	if err != nil {
		t.Fatalf("bundle %s: %v", hash, err)
	}
	return status, reason
}
