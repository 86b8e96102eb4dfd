// Package flow is ingress's side of private orderflow: the originator
// JSON-RPC endpoint, the searcher HTTP endpoint and the API-key accounts.
// Accepted transactions and bundles are published to the orderflow topics
// before the caller gets its answer.
package flow

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"time"

	of "blockspace.exchange/platform/orderflow"

	"blockspace.exchange/ingress/internal/ratelimit"
	"blockspace.exchange/platform/jsonrpc"
	"blockspace.exchange/topics"
)

// Originator methods (docs/orderflow.md "Originator methods").
const (
	MethodSendRawTransaction        = "eth_sendRawTransaction"
	MethodSendPrivateRawTransaction = "eth_sendPrivateRawTransaction"
	MethodSendPrivateTransaction    = "eth_sendPrivateTransaction"
)

// Config is what the orderflow edges need.
type Config struct {
	ChainID *big.Int
	Rules   of.Rules
	// DefaultRefundPercent applies when neither the query nor the body
	// names a refund; the recipient is then the transaction's sender.
	DefaultRefundPercent int
	// RatePerIP limits originator submissions per client IP, RatePerSender
	// per signing address of the transactions they carry (token buckets;
	// a rate of 0 disables). Decoding, publishing and streaming cost the
	// service and every searcher; a signature costs its sender nothing.
	RatePerIP, RatePerSender ratelimit.Rate
	// ClientIPHeader is the header a trusted gateway puts the client IP
	// in; "" = the peer address.
	ClientIPHeader string
	// Funds refuses senders that cannot pay, as the chain says; nil (no
	// CHAIN_RPC_URL) checks nothing.
	Funds *Funds
	// Submissions counts every call by method and outcome; nil counts
	// nothing.
	Submissions *of.Submissions
}

// Originators serves {originator_url}/v1 and /v1/<API_KEY>.
type Originators struct {
	cfg      Config
	keys     *of.Keys
	producer of.Producer
	seen     *Seen
	byIP     *ratelimit.Limiter
	bySender *ratelimit.Limiter
}

// NewOriginators returns the originator endpoint.
func NewOriginators(cfg Config, keys *of.Keys, producer of.Producer, seen *Seen) *Originators {
	return &Originators{cfg: cfg, keys: keys, producer: producer, seen: seen,
		byIP:     ratelimit.New(cfg.RatePerIP, 100_000, time.Now),
		bySender: ratelimit.New(cfg.RatePerSender, 100_000, time.Now)}
}

// Call answers one originator request and counts it in
// cfg.Submissions.
func (o *Originators) Call(ctx context.Context, call jsonrpc.Call) (any, error) {
	result, repeat, err := o.call(ctx, call)
	if repeat {
		o.cfg.Submissions.Duplicate(call.Req.Method)
	} else {
		o.cfg.Submissions.Count(call.Req.Method, err)
	}
	return result, err
}

// call answers one request; repeat tells that it was acknowledged as
// the repeat of a submission accepted before, and not published again.
func (o *Originators) call(ctx context.Context, call jsonrpc.Call) (result any, repeat bool, err error) {
	if ok, wait := o.byIP.Allow(ratelimit.ClientKey(call.HTTP, o.cfg.ClientIPHeader)); !ok {
		return nil, false, limited(wait, "too many submissions from this client address")
	}
	originator, err := o.authenticate(ctx, call.HTTP)
	if err != nil {
		return nil, false, err
	}
	var refund *topics.RefundPolicy
	if q := call.HTTP.URL.Query(); q.Has("refund") {
		p, err := of.ParseRefundQuery(q.Get("refund"))
		if err != nil {
			return nil, false, of.RPCError(err)
		}
		refund = &p
	}
	switch call.Req.Method {
	case MethodSendRawTransaction, MethodSendPrivateRawTransaction, MethodSendPrivateTransaction:
		raw, err := TxParam(call.Req.Method, call.Req.Param)
		if err != nil {
			return nil, false, err
		}
		return o.sendTx(ctx, call.Req.Method, raw, originator, refund)
	case of.MethodSendBundle:
		return o.sendBundle(ctx, call.Req.Param, originator, refund)
	}
	return nil, false, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found", call.Req.Method)
}

// TxParam reads the signed transaction out of the parameter of a
// single-transaction method: a 0x hex string, or for
// eth_sendPrivateTransaction {"tx": "0x...", "maxBlockNumber"?,
// "preferences"?}. maxBlockNumber (a block number) and preferences (an
// object) are checked, so that a client's mistake is not taken in
// silence, and otherwise left aside. Errors are JSON-RPC -32602.
func TxParam(method string, param json.RawMessage) (string, error) {
	if method != MethodSendPrivateTransaction {
		var raw *string
		if err := json.Unmarshal(param, &raw); err != nil || raw == nil {
			return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the parameter must be a 0x hex string")
		}
		return *raw, nil
	}
	var p struct {
		Tx             string          `json:"tx"`
		MaxBlockNumber json.RawMessage `json:"maxBlockNumber"`
		Preferences    json.RawMessage `json:"preferences"`
	}
	if err := of.StrictJSON(param, &p); err != nil || p.Tx == "" {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the parameter must be {\"tx\": \"0x...\"}")
	}
	if present(p.MaxBlockNumber) {
		if _, err := of.Quantity(p.MaxBlockNumber); err != nil {
			return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: maxBlockNumber %s is not a block number (hex quantity or integer)", p.MaxBlockNumber)
		}
	}
	if present(p.Preferences) && p.Preferences[0] != '{' {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: preferences must be an object")
	}
	return p.Tx, nil
}

// present reports whether an optional member was sent with a value.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// Route refuses a path other than /v1 and /v1/<API_KEY> with 404 before
// anything else of the request is read (jsonrpc.Config.Route).
func Route(r *http.Request) *jsonrpc.Error {
	if _, ok := PathKey(r.URL.Path); !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unknown path; use /v1 or /v1/<API_KEY>", HTTPStatus: http.StatusNotFound}
	}
	return nil
}

// authenticate reads the optional key of /v1/<API_KEY>; "" is the open
// endpoint.
func (o *Originators) authenticate(ctx context.Context, r *http.Request) (string, error) {
	if e := Route(r); e != nil {
		return "", e
	}
	key, _ := PathKey(r.URL.Path)
	if key == "" {
		return "", nil
	}
	id, err := o.keys.Lookup(ctx, key)
	if err != nil {
		return "", keyError(err)
	}
	if !id.Has(of.RoleOriginator) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeRule, Message: "this API key has no originator role", HTTPStatus: http.StatusForbidden}
	}
	return id.Address, nil
}

// PathKey splits "/v1" and "/v1/<key>".
func PathKey(path string) (string, bool) {
	path = strings.TrimSuffix(path, "/")
	if path == "/v1" {
		return "", true
	}
	key, ok := strings.CutPrefix(path, "/v1/")
	if !ok || key == "" || strings.Contains(key, "/") {
		return "", false
	}
	return key, true
}

func keyError(err error) error {
	if err == of.ErrUnknownKey {
		return &jsonrpc.Error{Code: jsonrpc.CodeRule, Message: "unknown or revoked API key", HTTPStatus: http.StatusUnauthorized}
	}
	return err
}

func (o *Originators) policy(from string, refund *topics.RefundPolicy) topics.RefundPolicy {
	p := topics.RefundPolicy{Recipient: from, Percent: o.cfg.DefaultRefundPercent}
	if refund != nil {
		p.Percent = refund.Percent
		if refund.Recipient != "" {
			p.Recipient = refund.Recipient
		}
	}
	return p
}

func (o *Originators) sendTx(ctx context.Context, method, raw, originator string, refund *topics.RefundPolicy) (any, bool, error) {
	tx, err := of.DecodeRawTx(raw, o.cfg.Rules)
	if err != nil {
		return nil, false, of.RPCError(err)
	}
	if err := o.admit(ctx, tx); err != nil {
		return nil, false, err
	}
	hash := tx.Hash.Hex()
	// The same transaction again is accepted once, and acknowledged only
	// once that one publish was.
	repeat, err := o.seen.Submit(ctx, hash, func() error {
		now := time.Now()
		msg := topics.OrderflowTx{
			Hash: hash, Raw: tx.Raw, Tx: tx.Decoded, Originator: originator,
			Refund: o.policy(tx.Decoded.From, refund), Method: method, ReceivedAt: now.UnixMilli(),
		}
		return of.PublishTx(ctx, o.producer, &msg, now)
	})
	if err != nil {
		return nil, false, of.Unavailable(err)
	}
	return hash, repeat, nil
}

func (o *Originators) sendBundle(ctx context.Context, param json.RawMessage, originator string, refund *topics.RefundPolicy) (any, bool, error) {
	b, err := of.ParseBundle(param, of.OriginatorBundle, o.cfg.Rules)
	if err != nil {
		return nil, false, of.RPCError(err)
	}
	if err := o.admit(ctx, bundleTxs(b)...); err != nil {
		return nil, false, err
	}
	hash := b.Hash.Hex()
	if refund == nil {
		refund = b.Refund
	}
	msg := topics.OrderflowOriginatorBundle{
		BundleHash: hash, Terms: b.Terms, ReplacementUUID: b.ReplacementUUID, Originator: originator,
		Refund: o.policy(b.Txs[0].Tx.Decoded.From, refund),
	}
	for _, it := range b.Txs {
		msg.Txs = append(msg.Txs, it.Wire())
	}
	if b.ReplacementUUID != "" {
		result, err := o.sendVersion(ctx, msg)
		return result, false, err
	}
	repeat, err := o.seen.Submit(ctx, hash, func() error {
		msg.ReceivedAt = time.Now().UnixMilli()
		return of.Publish(ctx, o.producer, topics.OrderflowBundles, topics.TypeOrderflowOriginatorBundle, "obundle-"+hash, hash, msg)
	})
	if err != nil {
		return nil, false, of.Unavailable(err)
	}
	return of.BundleResult{BundleHash: hash}, repeat, nil
}

// sendVersion publishes a version of a replacement group, at every call:
// keyed "<originator>/<replacementUuid>" as a searcher's group, so that
// the versions keep their order on one partition and the latest wins (a
// version sent again after another is the live one again). A group
// belongs to an account, so the open endpoint takes none: anyone who read
// the uuid from a bundle's public tracking could replace it.
func (o *Originators) sendVersion(ctx context.Context, msg topics.OrderflowOriginatorBundle) (any, error) {
	if msg.Originator == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "replacementUuid needs the partner endpoint /v1/<API_KEY>: a replacement group belongs to an account")
	}
	msg.ReceivedAt = time.Now().UnixMilli()
	err := of.Publish(ctx, o.producer, topics.OrderflowBundles, topics.TypeOrderflowOriginatorBundle,
		"obundle-"+msg.BundleHash+"-"+of.NewSubmissionID(), msg.Originator+"/"+msg.ReplacementUUID, msg)
	if err != nil {
		return nil, of.Unavailable(err)
	}
	return of.BundleResult{BundleHash: msg.BundleHash}, nil
}
