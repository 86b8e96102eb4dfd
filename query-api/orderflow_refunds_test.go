package queryapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
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
