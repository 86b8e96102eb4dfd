package queryapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// fundingFixture is a query-api with two users, one deposit, two
// withdrawal requests and a few postings of the first user.
type fundingFixture struct {
	h                 http.Handler
	pool              *pgxpool.Pool
	alice, bob        string // access tokens
	aliceCur, bobCur  int64
	alicePre          int64
	req1, req2, reqBo int64
}

func newFundingFixture(t *testing.T) *fundingFixture {
	t.Helper()
	ctx := context.Background()
	s, pool := newService(t, "dev", "0x00000000000000000000000000000000000000ab", nil)
	is := newIssuer(t, s, pool)
	f := &fundingFixture{h: s.Handler(), pool: pool}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	alice := is.user(t, "0x00000000000000000000000000000000000000a1")
	bob := is.user(t, "0x00000000000000000000000000000000000000b0")
	aliceID, bobID := alice.id, bob.id
	f.aliceCur, f.alicePre, f.alice = alice.cur, alice.pre, alice.token
	f.bobCur, f.bob = bob.cur, bob.token
	exec(`INSERT INTO deposits (command_id, user_id, account_id, token_id, chain_id, block_idx, block_hash, transaction_idx,
	        transaction_hash, log_idx, sender_address, deposit_address, quantity)
	      VALUES ('deposit-1', $1, $2, 1, 1337, 7, '0xb7', 0, '0xt7', 1, '0x00000000000000000000000000000000000000a1',
	        '0x00000000000000000000000000000000000000a1', 1.5),
	             ('deposit-2', $1, $2, 1, 1337, 9, '0xb9', 2, '0xt9', 0, '0x00000000000000000000000000000000000000c3',
	        '0x00000000000000000000000000000000000000a1', 0.25)`, aliceID, f.aliceCur)
	insertReq := func(uid, acc int64, q string, status int) int64 {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address, status)
			VALUES ($1, $2, 1, 1337, $3::numeric, 0.0001, '0x00000000000000000000000000000000000000a1', $4) RETURNING request_id`,
			uid, acc, q, status).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	f.req1 = insertReq(aliceID, f.aliceCur, "0.5", 10)
	f.req2 = insertReq(aliceID, f.aliceCur, "0.2", 104)
	f.reqBo = insertReq(bobID, f.bobCur, "1", 1)
	// A posting references its balance row (migration 0018), which the
	// ledger creates with the account.
	exec(`INSERT INTO account_balances (account_id, token_id) VALUES ($1, 1), ($2, 1) ON CONFLICT DO NOTHING`, f.aliceCur, f.alicePre)
	exec(`INSERT INTO journal (command_id, kind) VALUES ('e1', 'test')`)
	exec(`INSERT INTO postings (entry_id, account_id, token_id, amount, type, balance)
	      SELECT entry_id, v.acc, 1, v.amount, v.type, v.balance FROM journal,
	      (VALUES ($1::bigint, 1.5, 8, 1.5), ($1, -0.5, 7, 1.0), ($2::bigint, 0.5, 6, 0.5), ($1, -0.3, 9, 0.7), ($1, -0.0001, 14, 0.6999)) AS v(acc, amount, type, balance)
	      WHERE command_id = 'e1'`, f.aliceCur, f.alicePre)
	return f
}

func (f *fundingFixture) get(t *testing.T, token, path string) reply {
	t.Helper()
	return getAs(t, f.h, token, path)
}

func TestFundingReads(t *testing.T) {
	f := newFundingFixture(t)
	type tx struct {
		TrxID     int64  `json:"trxId"`
		AccountID int64  `json:"accountId"`
		Type      int    `json:"type"`
		Quantity  string `json:"quantity"`
		Balance   string `json:"balance"`
	}
	txTypes := func(t *testing.T, r reply) []int {
		t.Helper()
		var d struct{ Txs []tx }
		if err := json.Unmarshal(r.Body.Data, &d); err != nil || r.Status != 200 {
			t.Fatalf("status %d %s: %s", r.Status, r.Body.Message, r.Body.Data)
		}
		out := []int{}
		for _, x := range d.Txs {
			out = append(out, x.Type)
		}
		return out
	}
	cases := []struct {
		name, path string
		want       []int
	}{
		{"all accounts, newest first", "/api/v1/user/account/txs", []int{14, 9, 6, 7, 8}},
		{"one account", "/api/v1/user/account/" + itoa(f.aliceCur) + "/txs", []int{14, 9, 7, 8}},
		{"types", "/api/v1/user/account/txs?type=8,6", []int{6, 8}},
		{"limit", "/api/v1/user/account/txs?limit=2", []int{14, 9}},
		{"startId 0 is the newest", "/api/v1/user/account/txs?startId=0", []int{14, 9, 6, 7, 8}},
		{"startId 0 on an account", "/api/v1/user/account/" + itoa(f.aliceCur) + "/txs?startId=0&limit=2", []int{14, 9}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := txTypes(t, f.get(t, f.alice, tc.path)); !equalInts(got, tc.want) {
				t.Fatalf("types %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("startId pages", func(t *testing.T) {
		var d struct{ Txs []tx }
		_ = json.Unmarshal(f.get(t, f.alice, "/api/v1/user/account/txs?limit=2").Body.Data, &d)
		next := d.Txs[1].TrxID - 1
		if got := txTypes(t, f.get(t, f.alice, "/api/v1/user/account/txs?limit=2&startId="+itoa(next))); !equalInts(got, []int{6, 7}) {
			t.Fatalf("second page %v", got)
		}
	})
	t.Run("bob sees none of alice's", func(t *testing.T) {
		if got := txTypes(t, f.get(t, f.bob, "/api/v1/user/account/txs")); len(got) != 0 {
			t.Fatalf("bob sees %v", got)
		}
	})
	refusals := []struct {
		name, token, path string
		status, code      int
	}{
		{"limit above 100", f.alice, "/api/v1/user/account/txs?limit=101", 400, 1001},
		{"limit above 100 on an account", f.alice, "/api/v1/user/account/" + itoa(f.aliceCur) + "/txs?limit=101", 400, 1001},
		{"bad type", f.alice, "/api/v1/user/account/txs?type=x", 400, 1001},
		{"another user's account", f.bob, "/api/v1/user/account/" + itoa(f.aliceCur) + "/txs", 403, 1},
		{"no token", "", "/api/v1/user/account/txs", 401, 1},
		{"status without ids", f.alice, "/api/v1/user/funding/withdraw/status", 400, 1001},
		{"status with a bad id", f.alice, "/api/v1/user/funding/withdraw/status?requestIds=1,a", 400, 1001},
		{"withdraws limit", f.alice, "/api/v1/user/funding/withdraws?limit=500", 400, 1001},
		{"negative startId", f.alice, "/api/v1/user/account/txs?startId=-1", 400, 1001},
		{"withdraws negative startId", f.alice, "/api/v1/user/funding/withdraws?startId=-1", 400, 1001},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := f.get(t, tc.token, tc.path)
			if r.Status != tc.status || r.Body.Code != tc.code {
				t.Fatalf("status %d code %d %q, want %d code %d", r.Status, r.Body.Code, r.Body.Message, tc.status, tc.code)
			}
		})
	}
}

func TestDepositAndWithdrawReads(t *testing.T) {
	f := newFundingFixture(t)
	r := f.get(t, f.alice, "/api/v1/user/funding/deposits")
	want := `{"deposits":[{"eventId":2,"chainId":1337,"blockIdx":9,"blockHash":"0xb9","transactionIdx":2,"transactionHash":"0xt9","logIdx":0,` +
		`"senderAddress":"0x00000000000000000000000000000000000000c3","depositAddress":"0x00000000000000000000000000000000000000a1","status":10,` +
		`"deposits":[{"a":"0x0000000000000000000000000000000000000000","q":250000000000000000,"s":1}],"actions":[],"createDate":`
	if r.Status != 200 || !contains(string(r.Body.Data), want) || !contains(string(r.Body.Data), `"q":1500000000000000000,"s":1`) {
		t.Fatalf("deposits: %d %s", r.Status, r.Body.Data)
	}
	r = f.get(t, f.alice, "/api/v1/user/funding/deposits?startBlockId=8&limit=5")
	if !contains(string(r.Body.Data), `"blockIdx":7`) || contains(string(r.Body.Data), `"blockIdx":9`) {
		t.Fatalf("deposits below block 8: %s", r.Body.Data)
	}
	if r = f.get(t, f.bob, "/api/v1/user/funding/deposits"); string(r.Body.Data) != `{"deposits":[]}` {
		t.Fatalf("bob's deposits: %s", r.Body.Data)
	}

	type status struct {
		Requests []struct {
			RequestID int64   `json:"requestId"`
			Status    int     `json:"status"`
			TxHash    *string `json:"txHash"`
		}
		DailyWithdrawLimits []struct {
			ChainID   int64  `json:"chainId"`
			Remaining string `json:"remainingWithdrawLimit"`
		}
	}
	var st status
	r = f.get(t, f.alice, "/api/v1/user/funding/withdraw/status?requestIds="+itoa(f.req1)+","+itoa(f.req2)+","+itoa(f.reqBo))
	if err := json.Unmarshal(r.Body.Data, &st); err != nil || r.Status != 200 {
		t.Fatalf("status: %d %s", r.Status, r.Body.Data)
	}
	if len(st.Requests) != 2 || st.Requests[0].RequestID != f.req1 || st.Requests[0].Status != 10 || st.Requests[1].Status != 104 {
		t.Fatalf("alice's requests: %s", r.Body.Data)
	}
	// 1000 per day on chain 1337; the failed request does not count.
	if len(st.DailyWithdrawLimits) != 1 || st.DailyWithdrawLimits[0].ChainID != 1337 || st.DailyWithdrawLimits[0].Remaining != "999.5" {
		t.Fatalf("limits: %s", r.Body.Data)
	}
	// The caller's limits without naming a request: alice's as above, and
	// bob's whole limit less his own request, not alice's.
	for _, tc := range []struct {
		who, want string
	}{{f.alice, "999.5"}, {f.bob, "999"}} {
		var lim status
		r = f.get(t, tc.who, "/api/v1/user/funding/withdraw/limits")
		if err := json.Unmarshal(r.Body.Data, &lim); err != nil || r.Status != 200 || lim.Requests != nil ||
			len(lim.DailyWithdrawLimits) != 1 || lim.DailyWithdrawLimits[0].Remaining != tc.want {
			t.Fatalf("limits: %d %s, want remaining %s", r.Status, r.Body.Data, tc.want)
		}
	}
	if r = f.get(t, "", "/api/v1/user/funding/withdraw/limits"); r.Status != 401 {
		t.Fatalf("limits without a token: %d %s", r.Status, r.Body.Data)
	}
	r = f.get(t, f.alice, "/api/v1/user/funding/withdraws?limit=1")
	if !contains(string(r.Body.Data), `"requestId":`+itoa(f.req2)+`,`) || contains(string(r.Body.Data), `"requestId":`+itoa(f.req1)+`,`) {
		t.Fatalf("withdraws limit 1: %s", r.Body.Data)
	}
	r = f.get(t, f.alice, "/api/v1/user/funding/withdraws?startId=0&limit=1")
	if r.Status != 200 || !contains(string(r.Body.Data), `"requestId":`+itoa(f.req2)+`,`) {
		t.Fatalf("withdraws from startId 0: %d %s", r.Status, r.Body.Data)
	}
	r = f.get(t, f.alice, "/api/v1/user/funding/withdraws?startId="+itoa(f.req1))
	if !contains(string(r.Body.Data), `"requestId":`+itoa(f.req1)+`,`) || contains(string(r.Body.Data), `"requestId":`+itoa(f.req2)+`,`) {
		t.Fatalf("withdraws from req1: %s", r.Body.Data)
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
