package ingress_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestWithdrawRefusesTheWholeRequest: input that makes a withdraw request
// unusable is answered with its documented status and code and a message
// that names the problem, and reserves nothing, even for valid items
// before it.
func TestWithdrawRefusesTheWholeRequest(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "10")
	other := h.newUser("0x0000000000000000000000000000000000000b0b", "10")
	item := func(acc int64, token int, qty string) string {
		return fmt.Sprintf(`{"accountId": %d, "chainId": 1337, "tokenId": %d, "quantity": %q}`, acc, token, qty)
	}
	ok := item(u.current, 1, "1")
	cases := []struct {
		name, contentType, body string
		status                  int
		code                    float64
		message                 string
	}{
		{"unknown token", "application/json", "[" + ok + "," + item(u.current, 99, "1") + "]", 200, 10011, "item 1: tokenId 99"},
		{"token id past the tokens table", "application/json", "[" + item(u.current, 1<<31, "1") + "]", 200, 10011, "item 0: tokenId 2147483648"},
		{"preconf account", "application/json", "[" + ok + "," + item(u.preconf, 1, "1") + "]", 200, 10010, "item 1: account"},
		{"another user's account", "application/json", "[" + ok + "," + item(other.current, 1, "1") + "]", 403, 1, "not yours"},
		{"more decimals than the token", "application/json", "[" + item(u.current, 1, "0.0000000000000000001") + "]", 400, 1001, "decimals"},
		{"zero quantity", "application/json", "[" + item(u.current, 1, "0") + "]", 400, 1001, "item 0: quantity must be positive"},
		{"not a decimal", "application/json", "[" + item(u.current, 1, "1,5") + "]", 400, 1001, "item 0: quantity must be a decimal number, got \"1,5\""},
		{"negative id", "application/json", `[{"accountId": -3, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`, 400, 1001, "item 0: accountId"},
		{"no items", "application/json", `[]`, 400, 1001, "1 to 20"},
		{"too many items", "application/json", "[" + strings.Repeat(ok+",", 20) + ok + "]", 400, 1001, "got 21"},
		{"an object, not an array", "application/json", ok, 400, 1001, "body must be"},
		{"malformed JSON", "application/json", `[{"accountId": 1,`, 400, 1001, "malformed JSON"},
		{"not JSON", "application/x-www-form-urlencoded", "accountId=1", 415, 1001, "application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := h.do("POST", "/api/v1/user/funding/withdraw", u.token, tc.contentType, tc.body)
			msg, _ := a.body["message"].(string)
			if a.status != tc.status || code(a) != tc.code || a.body["success"] != false || !strings.Contains(msg, tc.message) {
				t.Fatalf("got %d %v, want %d code %v with %q", a.status, a.body, tc.status, tc.code, tc.message)
			}
		})
	}
	if l := h.locked(u.current); !l.IsZero() {
		t.Fatalf("refused requests locked %s", l)
	}
	var n int
	if err := h.pool.QueryRow(t.Context(), `SELECT count(*) FROM withdraw_requests`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d withdraw requests stored (%v)", n, err)
	}
}

// TestWithdrawListsAcceptedItemsWhenPostgresFails makes Postgres fail the
// second item of a request: the first is accepted and listed, so a client
// never retries it, and the items after it are answered as not processed
// (status 105) with nothing reserved for them.
func TestWithdrawListsAcceptedItemsWhenPostgresFails(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "10")
	if _, err := h.pool.Exec(t.Context(), `
		CREATE FUNCTION fail_seven() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.quantity = 7 THEN RAISE EXCEPTION 'injected failure'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER fail_seven BEFORE INSERT ON withdraw_requests FOR EACH ROW EXECUTE FUNCTION fail_seven();`); err != nil {
		t.Fatal(err)
	}
	item := func(qty string) string {
		return fmt.Sprintf(`{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": %q}`, u.current, qty)
	}
	a := h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json", "["+item("1")+","+item("7")+","+item("2")+"]")
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("withdraw: %d %v", a.status, a.body)
	}
	data := a.body["data"].(map[string]any)
	ids, failed := data["submittedRequestIds"].([]any), data["failedRequests"].([]any)
	if len(ids) != 1 || len(failed) != 2 {
		t.Fatalf("submitted %v, failed %v", ids, failed)
	}
	for i, qty := range []string{"7", "2"} {
		f := failed[i].(map[string]any)
		if f["status"] != float64(105) || f["quantity"] != qty {
			t.Fatalf("failed item %d: %v", i, f)
		}
	}
	// Only the first item and its fee are reserved.
	if l := h.locked(u.current); !l.Equal(decimal.RequireFromString("1.0001")) {
		t.Fatalf("locked %s", l)
	}
	if n := h.count(`SELECT count(*) FROM withdraw_requests`); n != 1 {
		t.Fatalf("%d withdraw requests stored", n)
	}

	// The same failure on the first item fails the request: nothing was accepted.
	a = h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json", "["+item("7")+","+item("2")+"]")
	if a.status != 500 || code(a) != 9999 {
		t.Fatalf("withdraw failing on its first item: %d %v", a.status, a.body)
	}
	if l := h.locked(u.current); !l.Equal(decimal.RequireFromString("1.0001")) {
		t.Fatalf("locked %s after a failed request", l)
	}
}
