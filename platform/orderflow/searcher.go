package orderflow

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// Producer is the part of a Kafka client the orderflow edges use: publish
// one record and wait for the broker's acknowledgement.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

// Publish encodes a submission payload (topics.OrderflowSubmissionVersion)
// in an envelope and produces it synchronously.
func Publish(ctx context.Context, p Producer, topic, typ, id, key string, payload any) error {
	e, err := topics.NewEnvelope(typ, topics.OrderflowSubmissionVersion, id, time.Now(), payload)
	if err != nil {
		return err
	}
	rec, err := kafka.NewRecord(topic, []byte(key), e)
	if err != nil {
		return err
	}
	if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("publish %s: %w", typ, err)
	}
	return nil
}

// PublishTx publishes an originator transaction (orderflow.tx, id
// "tx-<hash>", key the hash) and waits for the broker's acknowledgement.
// It is Publish for the hottest message: the payload is encoded without
// reflection.
func PublishTx(ctx context.Context, p Producer, m *topics.OrderflowTx, at time.Time) error {
	value := topics.AppendEnvelopeHead(make([]byte, 0, 1536), topics.TypeOrderflowTx, topics.OrderflowSubmissionVersion, "tx-"+m.Hash, at.UnixMilli())
	value = append(m.AppendJSON(value), '}')
	rec := &kgo.Record{Topic: topics.OrderflowTxs, Key: []byte(m.Hash), Value: value, Headers: txHeaders}
	if err := p.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("publish %s: %w", topics.TypeOrderflowTx, err)
	}
	return nil
}

// txHeaders are the record headers of every orderflow.tx (shared, never
// changed).
var txHeaders = []kgo.RecordHeader{
	{Key: topics.HeaderType, Value: []byte(topics.TypeOrderflowTx)},
	{Key: topics.HeaderVersion, Value: []byte(strconv.Itoa(topics.OrderflowSubmissionVersion))},
}

// Searcher methods (docs/orderflow.md "Searcher stream" and "Searcher
// bundles").
const (
	MethodSendBundle   = "eth_sendBundle"
	MethodCancelBundle = "eth_cancelBundle"
	MethodSubscribe    = "eth_subscribe"
	MethodUnsubscribe  = "eth_unsubscribe"
)

// SearcherMethods answers eth_sendBundle and eth_cancelBundle for an
// authenticated searcher, over HTTP (ingress) and WebSocket (relay) alike.
type SearcherMethods struct {
	Rules    Rules
	Producer Producer
	// Submissions counts every call Call answers; nil counts nothing.
	Submissions *Submissions
}

// BundleResult is the result of eth_sendBundle.
type BundleResult struct {
	BundleHash string `json:"bundleHash"`
}

// Call answers one searcher request and counts it; unknown methods are
// -32601.
func (m SearcherMethods) Call(ctx context.Context, who Identity, req jsonrpc.Request) (any, error) {
	result, err := m.call(ctx, who, req)
	m.Submissions.Count(req.Method, err)
	return result, err
}

func (m SearcherMethods) call(ctx context.Context, who Identity, req jsonrpc.Request) (any, error) {
	if !who.Has(RoleSearcher) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeRule, Message: "this API key has no searcher role", HTTPStatus: 403}
	}
	switch req.Method {
	case MethodSendBundle:
		return m.sendBundle(ctx, who, req.Param)
	case MethodCancelBundle:
		return m.cancelBundle(ctx, who, req.Param)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q is not supported here", req.Method)
}

func (m SearcherMethods) sendBundle(ctx context.Context, who Identity, param json.RawMessage) (any, error) {
	b, err := ParseBundle(param, SearcherBundle, m.Rules)
	if err != nil {
		return nil, RPCError(err)
	}
	if b.Cancel {
		return BundleResult{BundleHash: ""}, m.publishCancel(ctx, who, b.ReplacementUUID)
	}
	sb := topics.OrderflowSearcherBundle{
		SubmissionID: newSubmissionID(), BundleHash: b.Hash.Hex(), Searcher: who.Address,
		ReplacementUUID: b.ReplacementUUID, Terms: b.Terms, ReceivedAt: time.Now().UnixMilli(),
	}
	for _, it := range b.Txs {
		sb.Txs = append(sb.Txs, it.Wire())
	}
	if b.Txs[0].HashOnly {
		sb.BackrunOf = b.Txs[0].Hash.Hex()
	}
	if err := Publish(ctx, m.Producer, topics.OrderflowBundles, topics.TypeOrderflowSearcherBundle,
		"sbundle-"+sb.SubmissionID, searcherKey(sb), sb); err != nil {
		return nil, Unavailable(err)
	}
	return BundleResult{BundleHash: sb.BundleHash}, nil
}

type cancelParam struct {
	ReplacementUUID string `json:"replacementUuid"`
}

func (m SearcherMethods) cancelBundle(ctx context.Context, who Identity, param json.RawMessage) (any, error) {
	uuid, err := ParseCancel(param)
	if err != nil {
		return nil, RPCError(err)
	}
	return nil, m.publishCancel(ctx, who, uuid)
}

// ParseCancel reads the parameter of eth_cancelBundle,
// {"replacementUuid": "<UUID>"} and nothing else. Errors are *ParamError.
func ParseCancel(param json.RawMessage) (string, error) {
	var p cancelParam
	if err := StrictJSON(param, &p); err != nil {
		return "", paramErr("%v", err)
	}
	if !uuidPattern.MatchString(p.ReplacementUUID) {
		return "", paramErr("replacementUuid %q is not a UUID", p.ReplacementUUID)
	}
	return p.ReplacementUUID, nil
}

// publishCancel cancels a replacement group. A cancel of a group the relay
// never saw changes nothing and is not an error: a cancel may overtake the
// bundle it cancels only if sent on another connection, and then both end
// in the group's log order anyway.
func (m SearcherMethods) publishCancel(ctx context.Context, who Identity, uuid string) error {
	sb := topics.OrderflowSearcherBundle{
		SubmissionID: newSubmissionID(), Searcher: who.Address, ReplacementUUID: uuid,
		Cancel: true, Txs: []topics.BundleTx{}, ReceivedAt: time.Now().UnixMilli(),
	}
	if err := Publish(ctx, m.Producer, topics.OrderflowBundles, topics.TypeOrderflowSearcherBundle,
		"sbundle-"+sb.SubmissionID, searcherKey(sb), sb); err != nil {
		return Unavailable(err)
	}
	return nil
}

// searcherKey keeps every version of a replacement group on one partition.
func searcherKey(sb topics.OrderflowSearcherBundle) string {
	if sb.ReplacementUUID != "" {
		return sb.Searcher + "/" + sb.ReplacementUUID
	}
	return sb.BundleHash
}

func newSubmissionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewSubmissionID returns a random id for one submission.
func NewSubmissionID() string { return newSubmissionID() }

// Unavailable answers a submission whose publish failed: the log did not
// acknowledge it, so nothing was accepted and the caller may send it
// again (-32000, HTTP 503 with Retry-After). The cause is not the
// caller's to read.
func Unavailable(error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeRule, Message: "the log is unavailable; nothing was accepted, retry after 1 s", HTTPStatus: http.StatusServiceUnavailable}
}

// RPCError maps decoder errors to JSON-RPC errors: a bad transaction is
// -32600, a bad parameter -32602, anything else internal.
func RPCError(err error) error {
	var te *TxError
	if errors.As(err, &te) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%s", te.Error())
	}
	var pe *ParamError
	if errors.As(err, &pe) {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%s", pe.Error())
	}
	return err
}

// StrictJSON decodes an object refusing unknown fields.
func StrictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
