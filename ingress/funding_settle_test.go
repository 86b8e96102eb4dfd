package ingress_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/settler"
)

// withdraw posts one withdraw item of qty from acc on the dev chain and
// returns the item's outcome: its request id, or the failed item's status
// and remark.
func withdraw(t *testing.T, h *harness, u user, acc int64, qty string) (id int64, status int, remark string) {
	t.Helper()
	a := h.do("POST", "/api/v1/user/funding/withdraw", u.token, "application/json",
		fmt.Sprintf(`[{"accountId": %d, "chainId": 1337, "tokenId": 1, "quantity": %q}]`, acc, qty))
	if a.status != 200 || a.body["success"] != true {
		t.Fatalf("withdraw %s: %d %v", qty, a.status, a.body)
	}
	data := a.body["data"].(map[string]any)
	if ids := data["submittedRequestIds"].([]any); len(ids) == 1 {
		return int64(ids[0].(float64)), 0, ""
	}
	f := data["failedRequests"].([]any)[0].(map[string]any)
	return 0, int(f["status"].(float64)), f["remark"].(string)
}

// TestDailyWithdrawLimitIsRolling: the limit (1000 ETH a day on the dev
// chain) counts the user's requests of the last 24 hours across calls,
// not the fee, not requests that failed on chain, and not older ones.
func TestDailyWithdrawLimitIsRolling(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "5000")
	first, _, _ := withdraw(t, h, u, u.current, "600")
	steps := []struct {
		name   string
		before string // SQL run first, with the first request's id as $1
		qty    string
		status int
		remark string
	}{
		{name: "over what is left", qty: "400.0001", status: 103, remark: "Daily withdraw limit exceeded: 400 of 1000 left"},
		{name: "exactly what is left", qty: "400"},
		{name: "nothing left", qty: "0.0001", status: 103, remark: "Daily withdraw limit exceeded: 0 of 1000 left"},
		{name: "a request that failed on chain gives its amount back",
			before: `UPDATE withdraw_requests SET status = 104 WHERE request_id = $1`, qty: "600"},
		{name: "then the limit is used again", qty: "1", status: 103},
		{name: "requests older than a day no longer count",
			before: `UPDATE withdraw_requests SET create_date = now() - interval '24 hours 1 second' WHERE user_id = (SELECT user_id FROM withdraw_requests WHERE request_id = $1)`,
			qty:    "1000"},
	}
	for _, s := range steps {
		if s.before != "" {
			if _, err := h.pool.Exec(context.Background(), s.before, first); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		id, status, remark := withdraw(t, h, u, u.current, s.qty)
		if status != s.status || (s.status == 0) != (id > 0) || !strings.HasPrefix(remark, s.remark) {
			t.Fatalf("%s: request %d status %d %q, want status %d %q", s.name, id, status, remark, s.status, s.remark)
		}
	}
	// Reserved: 600 + 400 + 600 + 1000 and a fee of 0.0001 for each.
	if l := h.locked(u.current); !l.Equal(decimal.RequireFromString("2600.0004")) {
		t.Fatalf("locked %s", l)
	}
}

// TestRacingTransfersSettleWithoutOverdraw races 100 transfers between a
// user's two accounts, both ways, for more than either holds, then has
// the settler apply what ingress accepted: every accepted transfer
// settles, no balance ever goes below zero, and nothing stays locked.
func TestRacingTransfersSettleWithoutOverdraw(t *testing.T) {
	h := newHarness(t)
	u := h.newUser("0x00000000000000000000000000000000000a11ce", "4")
	if _, err := h.pool.Exec(t.Context(), `UPDATE account_balances SET quantity = 2 WHERE account_id = $1`, u.preconf); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accepted := map[bool]int{} // by direction: true = current to preconf
	var wg sync.WaitGroup
	for i := range 100 {
		out := i%5 < 3 // 60 out of current, 40 back
		wg.Go(func() {
			from, to := u.preconf, u.current
			if out {
				from, to = u.current, u.preconf
			}
			// A client sends a shed request (429, nothing stored) again,
			// as a loaded machine may shed some of these at once.
			a := h.transfer(u, from, to, "0.1")
			for tries := 0; a.status == 429 && tries < 50; tries++ {
				time.Sleep(20 * time.Millisecond)
				a = h.transfer(u, from, to, "0.1")
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case a.status == 200 && a.body["success"] == true:
				accepted[out]++
			case a.status == 200 && code(a) == 123:
			default:
				t.Errorf("unexpected answer %d %v", a.status, a.body)
			}
		})
	}
	wg.Wait()
	// Credits arrive only when the settler applies a transfer, so each
	// side can send exactly what it held: 40 and 20 transfers.
	if accepted[true] != 40 || accepted[false] != 20 {
		t.Fatalf("accepted %d out, %d back; want 40 and 20", accepted[true], accepted[false])
	}

	ctx := t.Context()
	settle(t, h, 60)
	var cur, pre, curLocked, preLocked, lowest decimal.Decimal
	err := h.pool.QueryRow(ctx, `
		SELECT c.quantity, c.locked, p.quantity, p.locked,
		       (SELECT min(balance) FROM postings WHERE account_id IN ($1, $2))
		FROM account_balances c, account_balances p
		WHERE c.account_id = $1 AND p.account_id = $2 AND c.token_id = 1 AND p.token_id = 1`, u.current, u.preconf).
		Scan(&cur, &curLocked, &pre, &preLocked, &lowest)
	if err != nil {
		t.Fatal(err)
	}
	// current 4 - 4 + 2, preconf 2 + 4 - 2.
	if !cur.Equal(decimal.NewFromInt(2)) || !pre.Equal(decimal.NewFromInt(4)) || !curLocked.IsZero() || !preLocked.IsZero() || lowest.IsNegative() {
		t.Fatalf("current %s (locked %s), preconf %s (locked %s), lowest running balance %s", cur, curLocked, pre, preLocked, lowest)
	}
}

// settle runs a settler on the harness's broker and database until it has
// applied n ledger commands, and checks it refused none.
func settle(t *testing.T, h *harness, n int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := settler.New(ctx, settler.Config{Brokers: h.brokers}, h.pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		s.Close()
		<-done
	}()
	deadline := time.Now().Add(time.Minute)
	for s.Stats().Applied+s.Stats().Rejected < n {
		if time.Now().After(deadline) {
			t.Fatalf("settler stats %+v, want %d commands", s.Stats(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := s.Stats(); st.Applied != n || st.Rejected != 0 {
		t.Fatalf("settler stats %+v, want %d applied", st, n)
	}
}
