package queryapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/topics"
)

// Orderflow serves the tracking and refund reads of {orderflow_url}:
// GET /v1/tx/<hash>, /v1/<API_KEY>/tx/<hash>, /v1/bundle?hash= and
// /v1/<API_KEY>/refunds, from the read models the relay writes.
type Orderflow struct {
	pool    *pgxpool.Pool
	keys    *of.Keys
	log     *slog.Logger
	handler http.Handler
}

// NewOrderflow returns the tracking reads; keyTTL <= 0 is 500ms.
func NewOrderflow(pool *pgxpool.Pool, keyTTL time.Duration, log *slog.Logger) *Orderflow {
	o := &Orderflow{pool: pool, keys: of.NewKeys(of.NewKeyStore(pool), keyTTL), log: log}
	o.handler = jsonrpc.WithRequestID(http.HandlerFunc(o.route))
	return o
}

// ServeHTTP answers with an X-Request-ID on every response.
func (o *Orderflow) ServeHTTP(w http.ResponseWriter, r *http.Request) { o.handler.ServeHTTP(w, r) }

// route routes the paths.
func (o *Orderflow) route(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		ofFail(w, http.StatusBadRequest, 1001, "error.method", r.Method+" is not supported here; use GET")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "v1" && parts[1] == "tx":
		o.publicTx(w, r, parts[2])
	case len(parts) == 2 && parts[0] == "v1" && parts[1] == "bundle":
		o.bundle(w, r, r.URL.Query().Get("hash"))
	case len(parts) == 4 && parts[0] == "v1" && parts[2] == "tx":
		o.withKey(w, r, parts[1], func(id of.Identity) { o.ownedTx(w, r, id, parts[3]) })
	case len(parts) == 3 && parts[0] == "v1" && parts[2] == "refunds":
		o.withKey(w, r, parts[1], func(id of.Identity) { o.refunds(w, r, id) })
	default:
		ofFail(w, http.StatusNotFound, 1001, "error.notFound", "no such orderflow endpoint: "+r.URL.Path)
	}
}

func (o *Orderflow) withKey(w http.ResponseWriter, r *http.Request, key string, next func(of.Identity)) {
	id, err := o.keys.Lookup(r.Context(), key)
	if errors.Is(err, of.ErrUnknownKey) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		ofFail(w, http.StatusUnauthorized, 1, "error.auth.invalidKey", "unknown or revoked API key")
		return
	}
	if err != nil {
		o.internal(w, err)
		return
	}
	next(id)
}

func hashParam(s string) (string, bool) {
	b, err := of.DecodeHex(s)
	return strings.ToLower(s), err == nil && len(b) == 32
}

// TxStatus is the public lifecycle of a transaction.
type TxStatus struct {
	Hash        string  `json:"hash"`
	Status      string  `json:"status"`
	BlockNumber *int64  `json:"blockNumber"`
	BlockHash   *string `json:"blockHash"`
	Reason      string  `json:"reason,omitempty"`
	ReceivedAt  *int64  `json:"receivedAt"`
	UpdatedAt   *int64  `json:"updatedAt"`
}

// OwnedTx adds what only the originator sees.
type OwnedTx struct {
	TxStatus
	Method     string              `json:"method"`
	BundleHash *string             `json:"bundleHash"`
	Tx         json.RawMessage     `json:"tx"`
	Refund     topics.RefundPolicy `json:"refundPolicy"`
	Refunds    []Refund            `json:"refunds"`
}

const txColumns = `hash, status, block_number, block_hash, reason, received_at, updated_at`

func scanTx(row pgx.Row, extra ...any) (TxStatus, error) {
	var t TxStatus
	var received, updated time.Time
	err := row.Scan(append([]any{&t.Hash, &t.Status, &t.BlockNumber, &t.BlockHash, &t.Reason, &received, &updated}, extra...)...)
	ms1, ms2 := received.UnixMilli(), updated.UnixMilli()
	t.ReceivedAt, t.UpdatedAt = &ms1, &ms2
	return t, err
}

func (o *Orderflow) publicTx(w http.ResponseWriter, r *http.Request, hash string) {
	hash, ok := hashParam(hash)
	if !ok {
		ofFail(w, http.StatusBadRequest, 1001, "error.validation", "the transaction hash must be 32 bytes of 0x hex")
		return
	}
	t, err := scanTx(o.pool.QueryRow(r.Context(), `SELECT `+txColumns+` FROM orderflow_txs WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		ofOK(w, TxStatus{Hash: hash, Status: topics.TxUnknown})
		return
	}
	if err != nil {
		o.internal(w, err)
		return
	}
	ofOK(w, t)
}

func (o *Orderflow) ownedTx(w http.ResponseWriter, r *http.Request, id of.Identity, hash string) {
	hash, ok := hashParam(hash)
	if !ok {
		ofFail(w, http.StatusBadRequest, 1001, "error.validation", "the transaction hash must be 32 bytes of 0x hex")
		return
	}
	var owned OwnedTx
	var originator string
	t, err := scanTx(o.pool.QueryRow(r.Context(), `SELECT `+txColumns+`, originator, method, bundle_hash, decoded, refund_recipient, refund_percent
		FROM orderflow_txs WHERE hash = $1`, hash), &originator, &owned.Method, &owned.BundleHash, &owned.Tx, &owned.Refund.Recipient, &owned.Refund.Percent)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && originator != id.Address) {
		ofFail(w, http.StatusNotFound, 1001, "error.notFound", "no transaction "+hash+" sent with this account's key")
		return
	}
	if err != nil {
		o.internal(w, err)
		return
	}
	owned.TxStatus = t
	if owned.Refunds, err = o.listRefunds(r, `tx_hash = $1`, 0, hash); err != nil {
		o.internal(w, err)
		return
	}
	ofOK(w, owned)
}

// BundleStatus is the lifecycle of a bundle.
type BundleStatus struct {
	BundleHash        string   `json:"bundleHash"`
	Kind              string   `json:"kind,omitempty"`
	Status            string   `json:"status"`
	BuilderBundleHash string   `json:"builderBundleHash,omitempty"`
	Builders          []string `json:"builders"`
	ReplacementUUID   string   `json:"replacementUuid,omitempty"`
	BackrunOf         string   `json:"backrunOf,omitempty"`
	TxHashes          []string `json:"txHashes"`
	BlockNumber       *int64   `json:"blockNumber"`
	Reason            string   `json:"reason,omitempty"`
	ReceivedAt        int64    `json:"receivedAt,omitempty"`
	UpdatedAt         int64    `json:"updatedAt,omitempty"`
}

func (o *Orderflow) bundle(w http.ResponseWriter, r *http.Request, hash string) {
	hash, ok := hashParam(hash)
	if !ok {
		ofFail(w, http.StatusBadRequest, 1001, "error.validation", "hash must be a 32-byte 0x hex bundle hash")
		return
	}
	var b BundleStatus
	var received, updated time.Time
	err := o.pool.QueryRow(r.Context(), `SELECT bundle_hash, kind, status, builder_bundle_hash, builders, replacement_uuid, backrun_of,
		tx_hashes, block_number, reason, received_at, updated_at FROM orderflow_bundles WHERE bundle_hash = $1`, hash).
		Scan(&b.BundleHash, &b.Kind, &b.Status, &b.BuilderBundleHash, &b.Builders, &b.ReplacementUUID, &b.BackrunOf,
			&b.TxHashes, &b.BlockNumber, &b.Reason, &received, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		ofOK(w, BundleStatus{BundleHash: hash, Status: topics.TxUnknown, Builders: []string{}, TxHashes: []string{}})
		return
	}
	if err != nil {
		o.internal(w, err)
		return
	}
	b.ReceivedAt, b.UpdatedAt = received.UnixMilli(), updated.UnixMilli()
	ofOK(w, b)
}

// Refund is one refund liability or payout.
type Refund struct {
	RefundID     string `json:"refundId"`
	TxHash       string `json:"txHash"`
	BundleHash   string `json:"bundleHash"`
	Originator   string `json:"originator"`
	Recipient    string `json:"recipient"`
	Percent      int    `json:"percent"`
	PaymentWei   string `json:"paymentWei"`
	AmountWei    string `json:"amountWei"`
	BlockNumber  int64  `json:"blockNumber"`
	Status       string `json:"status"`
	PayoutTxHash string `json:"payoutTxHash,omitempty"`
	PayoutBlock  *int64 `json:"payoutBlock"`
	// Failure says why a FAILED refund's recipient refused its payout.
	Failure   string `json:"failure,omitempty"`
	CreatedAt int64  `json:"createdAt"`
}

// Refunds is the data of GET /v1/<API_KEY>/refunds: every liability not
// yet confirmed on chain (PENDING, PAID) and every refund whose recipient
// refused the payout (FAILED: owed, unpaid), in full; and the confirmed
// payouts newest first, a page at a time (More: older ones exist, read
// them with before set to the last refundId).
type Refunds struct {
	Originators []string `json:"originators"`
	Pending     []Refund `json:"pending"`
	Confirmed   []Refund `json:"confirmed"`
	Failed      []Refund `json:"failed"`
	More        bool     `json:"more"`
}

// Bounds of a page of confirmed refunds.
const (
	defaultConfirmedPage = 100
	maxConfirmedPage     = 500
)

func (o *Orderflow) refunds(w http.ResponseWriter, r *http.Request, id of.Identity) {
	q := r.URL.Query()
	limit := defaultConfirmedPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxConfirmedPage {
			ofFail(w, http.StatusBadRequest, 1001, "error.validation",
				fmt.Sprintf("limit must be an integer from 1 to %d, not %.40q", maxConfirmedPage, v))
			return
		}
		limit = n
	}
	owners := append([]string{id.Address}, id.Partners...)
	owed, err := o.listRefunds(r, `originator = ANY($1) AND status <> 'CONFIRMED'`, 0, owners)
	if err != nil {
		o.internal(w, err)
		return
	}
	where, args := `originator = ANY($1) AND status = 'CONFIRMED'`, []any{owners}
	before := q.Get("before")
	if !plainID(before) {
		ofFail(w, http.StatusBadRequest, 1001, "error.validation",
			fmt.Sprintf("before must be the refundId of a confirmed refund, not %.40q", before))
		return
	}
	if before != "" {
		// The page after the named refund in the list's order; a refund
		// id that is not one of the partner's confirmed ones names no
		// position and leaves the page empty.
		where += ` AND (created_at, refund_id) < (SELECT created_at, refund_id FROM orderflow_refunds
			WHERE refund_id = $2 AND originator = ANY($1) AND status = 'CONFIRMED')`
		args = append(args, before)
	}
	confirmed, err := o.listRefunds(r, where, limit+1, args...)
	if err != nil {
		o.internal(w, err)
		return
	}
	out := Refunds{Originators: owners, Pending: []Refund{}, Confirmed: []Refund{}, Failed: []Refund{}}
	if len(confirmed) > limit {
		confirmed, out.More = confirmed[:limit], true
	}
	out.Confirmed = append(out.Confirmed, confirmed...)
	for _, rf := range owed {
		if rf.Status == topics.RefundFailed {
			out.Failed = append(out.Failed, rf)
		} else {
			out.Pending = append(out.Pending, rf)
		}
	}
	ofOK(w, out)
}

// plainID reports whether s can be an id of ours: at most 200 bytes of
// printable ASCII. Anything else names nothing and would not reach
// Postgres as text.
func plainID(s string) bool {
	if len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// listRefunds returns the refunds where holds, newest first; at most
// limit of them when limit > 0.
func (o *Orderflow) listRefunds(r *http.Request, where string, limit int, args ...any) ([]Refund, error) {
	sql := `SELECT refund_id, tx_hash, bundle_hash, originator, recipient, percent, payment_wei::text,
		amount_wei::text, block_number, CASE status WHEN 'PAYING' THEN 'PENDING' ELSE status END, payout_tx_hash, payout_block, failure, created_at
		FROM orderflow_refunds WHERE ` + where + ` ORDER BY created_at DESC, refund_id DESC`
	if limit > 0 {
		sql += ` LIMIT ` + strconv.Itoa(limit)
	}
	rows, err := o.pool.Query(r.Context(), sql, args...)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Refund, error) {
		var rf Refund
		var created time.Time
		err := row.Scan(&rf.RefundID, &rf.TxHash, &rf.BundleHash, &rf.Originator, &rf.Recipient, &rf.Percent, &rf.PaymentWei,
			&rf.AmountWei, &rf.BlockNumber, &rf.Status, &rf.PayoutTxHash, &rf.PayoutBlock, &rf.Failure, &created)
		rf.CreatedAt = created.UnixMilli()
		return rf, err
	})
	if list == nil {
		list = []Refund{}
	}
	return list, err
}

func (o *Orderflow) internal(w http.ResponseWriter, err error) {
	o.log.Error("orderflow read", "request_id", jsonrpc.RequestID(w), "error", err)
	ofFail(w, http.StatusInternalServerError, 9999, "error.unexpected", "unexpected error")
}

func ofOK(w http.ResponseWriter, data any) {
	ofWrite(w, http.StatusOK, map[string]any{"success": true, "data": data})
}

func ofFail(w http.ResponseWriter, status, code int, key, msg string) {
	ofWrite(w, status, map[string]any{"success": false, "code": code, "errorMsgKey": key, "message": msg, "data": map[string]any{}})
}

func ofWrite(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
