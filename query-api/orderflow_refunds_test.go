package queryapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
)

// GET /v1/<API_KEY>/refunds sorts the key's refunds into pending (PENDING,
// PAYING shown as PENDING, PAID), confirmed and failed, the last with the
// reason its recipient refused the payout; another originator's never
// show, and an unknown key is 401 with WWW-Authenticate: Bearer, code 1
// and an X-Request-ID, as every 401 of the service.
func TestRefundsReadSortsByOutcome(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	const mine, theirs = "0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b2"
	key, _, err := of.NewKeyStore(pool).Issue(t.Context(), mine)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ id, originator, status, failure string }{
		{"r1", mine, "PENDING", ""}, {"r2", mine, "PAYING", ""}, {"r3", mine, "PAID", ""}, {"r4", mine, "CONFIRMED", ""},
		{"r5", mine, "FAILED", "the recipient's receive reverts: execution reverted"}, {"r6", theirs, "FAILED", "x"},
	} {
		if _, err := pool.Exec(t.Context(), `INSERT INTO orderflow_refunds (refund_id, tx_hash, bundle_hash, originator, recipient, percent,
			payment_wei, amount_wei, block_number, status, failure) VALUES ($1, '0xt', '0xb', $2, '0xr', 50, 10, 5, 7, $3, $4)`,
			r.id, r.originator, r.status, r.failure); err != nil {
			t.Fatal(err)
		}
	}
	h := NewOrderflow(pool, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/"+key+"/refunds", nil))
	var body struct {
		Data Refunds `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 {
		t.Fatalf("refunds: %d %s", rec.Code, rec.Body)
	}
	ids := func(list []Refund) (out []string) {
		for _, r := range list {
			out = append(out, r.RefundID+":"+r.Status)
		}
		return out
	}
	d := body.Data
	if len(d.Pending) != 3 || len(d.Confirmed) != 1 || len(d.Failed) != 1 ||
		d.Failed[0].RefundID != "r5" || d.Failed[0].Failure == "" || d.Confirmed[0].RefundID != "r4" {
		t.Fatalf("pending %v, confirmed %v, failed %v", ids(d.Pending), ids(d.Confirmed), ids(d.Failed))
	}
	for _, r := range d.Pending {
		if r.Status != "PENDING" && r.Status != "PAID" {
			t.Fatalf("pending refund %s shows %s", r.RefundID, r.Status)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/ofk_"+"00"+"/refunds", nil))
	var refusal struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &refusal); err != nil || rec.Code != 401 || refusal.Code != 1 || rec.Header().Get("WWW-Authenticate") != "Bearer" ||
		rec.Header().Get("X-Request-ID") == "" {
		t.Fatalf("unknown key: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

// TestRefundsReadPagesConfirmedAndKeepsEveryLiability: every refund still
// owed is listed however many there are, and confirmed payouts come a
// page at a time, newest first, until more is false.
func TestRefundsReadPagesConfirmedAndKeepsEveryLiability(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	const mine = "0x00000000000000000000000000000000000000a1"
	key, _, err := of.NewKeyStore(pool).Issue(t.Context(), mine)
	if err != nil {
		t.Fatal(err)
	}
	// Three confirmed payouts, then 600 newer liabilities and a refused one.
	if _, err := pool.Exec(t.Context(), `INSERT INTO orderflow_refunds (refund_id, tx_hash, bundle_hash, originator, recipient, percent,
		payment_wei, amount_wei, block_number, status, failure, created_at)
		SELECT 'c' || n, '0xt', '0xb', $1, '0xr', 50, 10, 5, 7, 'CONFIRMED', '', '2026-01-01'::timestamptz + n * interval '1 minute'
		FROM generate_series(1, 3) n
		UNION ALL
		SELECT 'p' || n, '0xt', '0xb', $1, '0xr', 50, 10, 5, 7, 'PENDING', '', '2026-02-01'::timestamptz + n * interval '1 second'
		FROM generate_series(1, 600) n
		UNION ALL
		SELECT 'f', '0xt', '0xb', $1, '0xr', 50, 10, 5, 7, 'FAILED', 'reverts', '2026-03-01'`, mine); err != nil {
		t.Fatal(err)
	}
	h := NewOrderflow(pool, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	read := func(query string) (int, Refunds) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/"+key+"/refunds"+query, nil))
		var body struct {
			Data Refunds `json:"data"`
			Code int     `json:"code"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("refunds%s: %d %s", query, rec.Code, rec.Body)
		}
		if rec.Code != 200 {
			return rec.Code*10000 + body.Code, Refunds{}
		}
		return rec.Code, body.Data
	}
	status, d := read("?limit=2")
	if status != 200 || len(d.Pending) != 600 || len(d.Failed) != 1 || !d.More ||
		len(d.Confirmed) != 2 || d.Confirmed[0].RefundID != "c3" || d.Confirmed[1].RefundID != "c2" {
		t.Fatalf("first page: %d, %d pending, %d failed, confirmed %+v, more %v", status, len(d.Pending), len(d.Failed), d.Confirmed, d.More)
	}
	status, d = read("?limit=2&before=c2")
	if status != 200 || len(d.Pending) != 600 || d.More || len(d.Confirmed) != 1 || d.Confirmed[0].RefundID != "c1" {
		t.Fatalf("second page: %d, confirmed %+v, more %v", status, d.Confirmed, d.More)
	}
	if status, d = read("?before=p1"); status != 200 || len(d.Confirmed) != 0 || d.More || len(d.Pending) != 600 {
		t.Fatalf("before a refund that is not a confirmed one: %d, confirmed %+v", status, d.Confirmed)
	}
	if status, d = read(""); status != 200 || len(d.Confirmed) != 3 || d.More {
		t.Fatalf("default page: %d, confirmed %+v, more %v", status, d.Confirmed, d.More)
	}
	for _, bad := range []string{"?limit=0", "?limit=501", "?limit=x", "?limit=" + strings.Repeat("9", 100),
		"?before=%00", "?before=%FF", "?before=" + strings.Repeat("c", 201)} {
		if status, _ := read(bad); status != 400*10000+1001 {
			t.Errorf("refunds%s: %d, want 400 with code 1001", bad, status)
		}
	}
}
