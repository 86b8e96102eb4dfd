package devstack

import (
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// TestOrderEntryInTheStack places orders through the stack's REST base:
// the demo seller offers a whole block it was issued, a user buys it, and
// the matcher's trade is settled; another buy is cancelled through the
// cancel route and its reservation comes back. Nothing but the REST
// interface is used to trade.
func TestOrderEntryInTheStack(t *testing.T) {
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "1s"})
	ctx := t.Context()
	c := client{t: t, base: s.Addresses().REST}
	buyer, buyerToken := loginPreconf(t, c, newWallet(t))
	seller, sellerToken := loginPreconf(t, c, demoWallet(t))
	if _, err := s.pool.Exec(ctx, `UPDATE account_balances SET quantity = 3 WHERE account_id = $1 AND token_id = 1`, buyer); err != nil {
		t.Fatal(err)
	}

	// A whole-block market with time left: the newest one listed.
	var slot uint64
	waitFor(t, "an open whole-block market", func() bool {
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if m.Status == topics.MarketStatusOpen && time.UnixMilli(m.MaturityTime).After(time.Now().Add(30*time.Second)) {
				slot = max(slot, m.Slot)
			}
		}
		return slot != 0
	})
	instrument := topics.InstrumentID(topics.WholeBlock, slot)
	place := func(token string, body map[string]any) map[string]any {
		t.Helper()
		status, out := postJSON(t, c.base+"/api/v1/wholeblock/order", body, bearer(token))
		data, _ := out["data"].(map[string]any)
		list, _ := data["orders"].([]any)
		if status != 200 || len(list) != 1 {
			t.Fatalf("place: %d %v", status, out)
		}
		o := list[0].(map[string]any)
		if o["errorCode"] != nil {
			t.Fatalf("place refused: %v", o)
		}
		return o
	}
	order := func(account int64, buy bool, price string) map[string]any {
		return map[string]any{"accountId": account, "instrumentId": instrument, "side": buy, "orderType": 2, "quantity": "1", "price": price}
	}
	sell := place(sellerToken, order(seller, false, "0.5"))
	buy := place(buyerToken, order(buyer, true, "0.5"))
	done := func(o map[string]any, status int) func() bool {
		return func() bool {
			var st int
			var released bool
			err := s.pool.QueryRow(ctx, `SELECT status, released FROM orders WHERE order_id = $1`, int64(o["orderId"].(float64))).Scan(&st, &released)
			return err == nil && st == status && released
		}
	}
	waitFor(t, "the sell filled and settled", done(sell, topics.OrderStatusDone))
	waitFor(t, "the buy filled and settled", done(buy, topics.OrderStatusDone))
	fee := decimal.RequireFromString("0.0005") // 0.5 × the regular buy fee rate 0.001
	if q, l := s.balance(t, buyer); !q.Equal(decimal.RequireFromString("3").Sub(decimal.RequireFromString("0.5")).Sub(fee)) || !l.IsZero() {
		t.Fatalf("buyer holds %s, locked %s", q, l)
	}

	// A buy that rests, cancelled through REST: the matcher cancels it and
	// the settler unlocks its reservation.
	resting := place(buyerToken, order(buyer, true, "0.1"))
	if _, l := s.balance(t, buyer); !l.Equal(decimal.RequireFromString("0.1001")) {
		t.Fatalf("the resting buy locked %s", l)
	}
	status, out := postJSON(t, c.base+"/api/v1/wholeblock/cancel-order",
		map[string]any{"accountId": buyer, "instrumentId": instrument, "orderId": resting["orderId"]}, bearer(buyerToken))
	data, _ := out["data"].(map[string]any)
	if items, _ := data["items"].([]any); status != 200 || len(items) != 1 || items[0].(map[string]any)["code"] != 1.0 {
		t.Fatalf("cancel: %d %v", status, out)
	}
	waitFor(t, "the resting buy cancelled and released", done(resting, topics.OrderStatusCancelledByUser))
	if _, l := s.balance(t, buyer); !l.IsZero() {
		t.Fatalf("locked %s after the cancel", l)
	}
}

// loginPreconf logs the wallet in and returns its preconf trading account
// and access token.
func loginPreconf(t *testing.T, c client, w wallet) (int64, string) {
	t.Helper()
	sess, _ := w.login(t, c)
	for _, a := range sess.User.Accounts {
		if a.Type == 2 {
			return a.AccountID, sess.AccessToken.Token
		}
	}
	t.Fatalf("user %d has no preconf trading account", sess.User.UserID)
	return 0, ""
}

// demoWallet is the wallet of the demo seller, whose validator proposes
// every slot of the dev beacon.
func demoWallet(t *testing.T) wallet {
	key, err := crypto.HexToECDSA(DemoUserKey[2:])
	if err != nil {
		t.Fatal(err)
	}
	return wallet{key: key, addr: crypto.PubkeyToAddress(key.PublicKey).Hex()}
}

func (s *running) balance(t *testing.T, account int64) (quantity, locked decimal.Decimal) {
	t.Helper()
	if err := s.pool.QueryRow(t.Context(), `SELECT quantity, locked FROM account_balances WHERE account_id = $1 AND token_id = 1`,
		account).Scan(&quantity, &locked); err != nil {
		t.Fatal(err)
	}
	return quantity, locked
}
