package ingress_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/ingress"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/topics"
)

func (h *harness) transfer(u user, from, to int64, qty string) answer {
	form := url.Values{"fromAccountId": {fmt.Sprint(from)}, "toAccountId": {fmt.Sprint(to)}, "tokenId": {"1"}, "quantity": {qty}}
	return h.do("POST", "/api/v1/user/account/transfer/token", u.token, "application/x-www-form-urlencoded", form.Encode())
}

func (h *harness) locked(acc int64) decimal.Decimal {
	h.t.Helper()
	var l decimal.Decimal
	if err := h.pool.QueryRow(h.t.Context(), `SELECT locked FROM account_balances WHERE account_id = $1 AND token_id = 1`, acc).Scan(&l); err != nil {
		h.t.Fatal(err)
	}
	return l
}

// commands reads every ledger command published so far.
func (h *harness) commands() []topics.Envelope {
	h.t.Helper()
	var out []topics.Envelope
	for _, r := range h.records(topics.LedgerCommands) {
		e, err := kafka.DecodeRecord(r)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestTransferRules(t *testing.T) {
	h := newHarness(t)
	alice := h.newUser("0x00000000000000000000000000000000000a11ce", "2")
	bob := h.newUser("0x0000000000000000000000000000000000000b0b", "2")

	for _, tc := range []struct {
		name     string
		from, to int64
		qty      string
		status   int
		code     float64
	}{
		{"another user's source", bob.current, alice.preconf, "1", 403, 1},
		{"another user's target", alice.current, bob.preconf, "1", 403, 1},
		{"no such account", alice.current, 999999, "1", 403, 1},
		{"zero", alice.current, alice.preconf, "0", 400, 1001},
		{"too many decimals", alice.current, alice.preconf, "0.0000000000000000001", 400, 1001},
		{"not a number", alice.current, alice.preconf, "1e", 400, 1001},
		{"same account", alice.current, alice.current, "1", 400, 1001},
		{"more than available", alice.current, alice.preconf, "2.5", 200, 123},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := h.transfer(alice, tc.from, tc.to, tc.qty)
			if a.status != tc.status || code(a) != tc.code || a.body["success"] != false {
				t.Fatalf("got %d %v", a.status, a.body)
			}
		})
	}
	// A token id past the range of the tokens table names no token.
	form := url.Values{"fromAccountId": {fmt.Sprint(alice.current)}, "toAccountId": {fmt.Sprint(alice.preconf)}, "tokenId": {"2147483648"}, "quantity": {"1"}}
	if a := h.do("POST", "/api/v1/user/account/transfer/token", alice.token, "application/x-www-form-urlencoded", form.Encode()); a.status != 400 || code(a) != 1001 {
		t.Fatalf("token id 2^31: %d %v", a.status, a.body)
	}
	a := h.transfer(alice, alice.current, alice.preconf, "1.25")
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("transfer: %d %v", a.status, a.body)
	}
	// A JSON body with the interface's types: integer ids, a number.
	a = h.do("POST", "/api/v1/user/account/transfer/token", alice.token, "application/json",
		fmt.Sprintf(`{"fromAccountId": %d, "toAccountId": %d, "tokenId": 1, "quantity": 0.25}`, alice.current, alice.preconf))
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("transfer with a JSON body: %d %v", a.status, a.body)
	}
	if l := h.locked(alice.current); !l.Equal(decimal.RequireFromString("1.5")) {
		t.Fatalf("locked %s", l)
	}
	cmds := h.commands()
	if len(cmds) != 2 || cmds[0].Type != topics.TypeLedgerTransfer {
		t.Fatalf("commands %v", cmds)
	}
	var p topics.LedgerTransfer
	if err := topics.DecodeFunding(cmds[0], topics.TypeLedgerTransfer, &p); err != nil || p.Quantity != "1.25" || p.UserID != alice.id {
		t.Fatalf("payload %+v %v", p, err)
	}
	var n int
	if err := h.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("outbox rows %d %v", n, err)
	}
}

// transferAsClient is transfer as a client makes it: documented
// back-pressure (429 code 20, 503 code 21, each with Retry-After in whole
// seconds; nothing was done) is waited out for the seconds Retry-After
// says and the transfer sent again, for as long as a test waits
// (poll.Timeout). Any other answer, a refusal without its code or
// Retry-After, or the last refusal once the wait is over, is returned.
func (h *harness) transferAsClient(u user, from, to int64, qty string) answer {
	deadline := time.Now().Add(poll.Timeout)
	for {
		a := h.transfer(u, from, to, qty)
		var want float64
		switch a.status {
		case http.StatusTooManyRequests:
			want = httpx.CodeTooMany
		case http.StatusServiceUnavailable:
			want = httpx.CodeUnavailable
		default:
			return a
		}
		after, err := strconv.Atoi(a.header.Get("Retry-After"))
		if code(a) != want || err != nil || after < 1 || time.Now().After(deadline) {
			return a
		}
		time.Sleep(time.Duration(after) * time.Second)
	}
}

// TestConcurrentTransfersNeverOverdraw races 100 transfers of 0.1 for
// funds that cover 40 of them. Each client meets every documented answer:
// back-pressure is retried as docs/codes.md says, so that only acceptance
// (40) and insufficient funds (code 123, 60) are left, and exactly the
// funds are locked and published, in 40 commands.
func TestConcurrentTransfersNeverOverdraw(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "4")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for range 100 {
		wg.Go(func() {
			a := h.transferAsClient(u, u.current, u.preconf, "0.1")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case a.status == 200 && a.body["success"] == true:
				ok++
			case a.status == 200 && code(a) == 123:
				refused++
			default:
				t.Errorf("unexpected answer %d %v %v", a.status, a.header, a.body)
			}
		})
	}
	wg.Wait()
	if ok != 40 || refused != 60 {
		t.Fatalf("%d accepted, %d refused", ok, refused)
	}
	if l := h.locked(u.current); !l.Equal(decimal.NewFromInt(4)) {
		t.Fatalf("locked %s", l)
	}
	var quantity decimal.Decimal
	if err := h.pool.QueryRow(t.Context(), `SELECT quantity FROM account_balances WHERE account_id = $1 AND token_id = 1`, u.current).Scan(&quantity); err != nil {
		t.Fatal(err)
	}
	if !quantity.Equal(decimal.NewFromInt(4)) {
		t.Fatalf("quantity %s before the ledger moved anything", quantity)
	}
	// A command whose acknowledgement came late is left to the outbox
	// relay, which may publish it once more; consumers know it by its id.
	poll.Until(t, "every transfer published", func() bool {
		var n int
		if err := h.pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	ids := map[string]bool{}
	sum := decimal.Zero
	for _, e := range h.commands() {
		if ids[e.ID] {
			continue
		}
		ids[e.ID] = true
		var p topics.LedgerTransfer
		if err := topics.DecodeFunding(e, topics.TypeLedgerTransfer, &p); err != nil {
			t.Fatal(err)
		}
		sum = sum.Add(decimal.RequireFromString(p.Quantity))
	}
	if len(ids) != 40 || !sum.Equal(decimal.NewFromInt(4)) {
		t.Fatalf("%d commands published, for %s in all", len(ids), sum)
	}
}

func TestWithdrawJudgesEachItem(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "2000")
	body := fmt.Sprintf(`[
		{"accountId": %[1]d, "chainId": 1337, "tokenId": 1, "quantity": "1.5"},
		{"accountId": %[1]d, "chainId": 1, "tokenId": 1, "quantity": "1"},
		{"accountId": %[1]d, "chainId": 1337, "tokenId": 1, "quantity": "1999"},
		{"accountId": %[1]d, "chainId": 1337, "tokenId": 1, "quantity": "998.5"},
		{"accountId": %[1]d, "chainId": 1337, "tokenId": 1, "quantity": "0.0001"}
	]`, u.current)
	a := h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json", body)
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("withdraw: %d %v", a.status, a.body)
	}
	data := a.body["data"].(map[string]any)
	ids := data["submittedRequestIds"].([]any)
	failed := data["failedRequests"].([]any)
	if len(ids) != 2 || len(failed) != 3 {
		t.Fatalf("submitted %v failed %v", ids, failed)
	}
	want := []struct {
		status float64
		remark string
	}{{101, "Unsupported Chain ID"}, {102, "Insufficient funds"}, {103, "Daily withdraw limit exceeded"}}
	for i, w := range want {
		f := failed[i].(map[string]any)
		if f["status"] != w.status || !strings.HasPrefix(f["remark"].(string), w.remark) {
			t.Fatalf("failed item %d: %v", i, f)
		}
	}
	// 1.5 + 998.5 reserved with a fee of 0.0001 each.
	if l := h.locked(u.current); !l.Equal(decimal.RequireFromString("1000.0002")) {
		t.Fatalf("locked %s", l)
	}
	if n := len(h.commands()); n != 2 {
		t.Fatalf("%d commands", n)
	}
	other := h.newUser("0x0000000000000000000000000000000000000b0b", "1")
	a = h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json",
		fmt.Sprintf(`[{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`, other.current))
	if a.status != 403 {
		t.Fatalf("withdraw from another user's account: %d %v", a.status, a.body)
	}
	a = h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json",
		fmt.Sprintf(`[{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": "1"}]`, u.preconf))
	if code(a) != 10010 {
		t.Fatalf("withdraw from the preconf account: %d %v", a.status, a.body)
	}
}

// TestFundingCommandsSurviveKafkaOutage stops the broker: a transfer and a
// withdrawal are stored with their reservations and answered as accepted
// (answering 503 would invite a retry that moves the money twice), and the
// outbox relay delivers each command exactly once when the broker is back.
func TestFundingCommandsSurviveKafkaOutage(t *testing.T) {
	// A broker of its own: it runs beside the other outage tests, after
	// those that take the shared broker in turn.
	t.Parallel()
	h := startHarness(t, harnessOptions{ownBroker: true,
		outbox: ingress.OutboxConfig{PublishTimeout: 300 * time.Millisecond, RelayAge: 200 * time.Millisecond, RelayEvery: 100 * time.Millisecond},
	})
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "5")
	h.stopBroker()

	a := h.transfer(u, u.current, u.preconf, "1.25")
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("transfer while the broker is down: %d %v", a.status, a.body)
	}
	a = h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json",
		fmt.Sprintf(`[{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": "2"}]`, u.current))
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("withdraw while the broker is down: %d %v", a.status, a.body)
	}
	ids, _ := a.body["data"].(map[string]any)["submittedRequestIds"].([]any)
	if len(ids) != 1 {
		t.Fatalf("withdraw answer %v", a.body)
	}
	// 1.25 + 2 + the withdrawal fee of 0.0001.
	if l := h.locked(u.current); !l.Equal(decimal.RequireFromString("3.2501")) {
		t.Fatalf("locked %s", l)
	}
	if n := h.count(`SELECT count(*) FROM outbox`); n != 2 {
		t.Fatalf("%d outbox rows while the broker is down", n)
	}

	h.startBroker()
	poll.Until(t, "the relay delivers the stored commands", func() bool { return h.count(`SELECT count(*) FROM outbox`) == 0 })
	// A record the client still held when the broker left may arrive
	// besides the relay's copy; both carry the command's id.
	delivered := map[string]string{}
	for _, e := range h.commands() {
		delivered[e.ID] = e.Type
	}
	if len(delivered) != 2 {
		t.Fatalf("commands delivered: %v", delivered)
	}
	settle(t, h, 2)
	// current 5 - 1.25 - 2 - 0.0001, nothing left locked; preconf 1.25.
	var cur, curLocked, pre decimal.Decimal
	if err := h.pool.QueryRow(t.Context(), `
		SELECT c.quantity, c.locked, p.quantity FROM account_balances c, account_balances p
		WHERE c.account_id = $1 AND p.account_id = $2 AND c.token_id = 1 AND p.token_id = 1`, u.current, u.preconf).
		Scan(&cur, &curLocked, &pre); err != nil {
		t.Fatal(err)
	}
	if !cur.Equal(decimal.RequireFromString("1.7499")) || !curLocked.IsZero() || !pre.Equal(decimal.RequireFromString("1.25")) {
		t.Fatalf("current %s (locked %s), preconf %s", cur, curLocked, pre)
	}
}
