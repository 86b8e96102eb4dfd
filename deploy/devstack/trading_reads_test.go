package devstack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestTradingReadsThroughOneBase logs two wallets in through the stack,
// writes an order of each into Postgres as the settler does, and reads
// them through the REST base: the public listing shows both without their
// owners, each user's own read only its own, and a write method on a read
// path crosses the gateway to ingress, which knows the path.
func TestTradingReadsThroughOneBase(t *testing.T) {
	t.Parallel()
	s := startStack(t, worldTempDir(t))
	c := client{t: t, base: s.Addresses().REST}
	alice, _ := newWallet(t).login(t, c)
	bob, _ := newWallet(t).login(t, c)
	for i, sess := range []session{alice, bob} {
		var account int64
		for _, a := range sess.User.Accounts {
			if a.Type == 2 {
				account = a.AccountID
			}
		}
		if _, err := s.pool.Exec(context.Background(), `INSERT INTO orders (order_id, user_id, account_id, market_id,
			instrument_id, slot, side, order_type, price, quantity, status, client_order_id)
			VALUES ($1, $2, $3, 1000000000007, 'ETH-PC-7', 7, true, 2, 0.000000002, 21000, 1, 'mine')`,
			1000+i, sess.User.UserID, account); err != nil {
			t.Fatal(err)
		}
	}
	type orders struct {
		Orders []struct {
			OrderID       int64   `json:"orderId"`
			AccountID     *int64  `json:"accountId"`
			ClientOrderID *string `json:"clientOrderId"`
		} `json:"orders"`
	}
	read := func(path string, header map[string]string) orders {
		t.Helper()
		a := c.do("GET", path, nil, header)
		var o orders
		if a.status != 200 || json.Unmarshal(a.body.Data, &o) != nil {
			t.Fatalf("GET %s: %d %s", path, a.status, a.raw)
		}
		return o
	}
	public := read("/api/v1/p/inclusion-preconf/orders?instrumentId=ETH-PC-7&onbook=true", nil)
	if len(public.Orders) != 2 || public.Orders[0].OrderID != 1000 || public.Orders[1].OrderID != 1001 {
		t.Fatalf("public orders: %+v", public)
	}
	for _, o := range public.Orders {
		if o.AccountID != nil || o.ClientOrderID != nil {
			t.Fatalf("public order %d shows its owner", o.OrderID)
		}
	}
	own := read("/api/v1/user/inclusion-preconf/orders", bearer(alice.AccessToken.Token))
	if len(own.Orders) != 1 || own.Orders[0].OrderID != 1000 || own.Orders[0].ClientOrderID == nil || *own.Orders[0].ClientOrderID != "mine" {
		t.Fatalf("alice's orders: %+v", own)
	}
	if a := c.do("GET", "/api/v1/p/wholeblock/orders?instrumentId=ETH-PC-7", nil, nil); a.status != 400 || a.body.Code != 1001 ||
		!strings.Contains(a.body.Message, "instrumentId") {
		t.Errorf("preconf instrument on a wholeblock path: %d %s", a.status, a.raw)
	}
	if a := c.do("GET", "/api/v1/user/wholeblock/trades", nil, nil); a.status != 401 || a.body.Code != 1 {
		t.Errorf("own trades without a token: %d %s", a.status, a.raw)
	}
	if a := c.do("POST", "/api/v1/p/wholeblock/orders", nil, nil); a.status != 400 || a.body.Code != 1001 {
		t.Errorf("POST on a read path: %d %s", a.status, a.raw)
	}
}
