package devstack

import (
	"blockspace.exchange/deploy/devchain"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/settler"
	"blockspace.exchange/topics"
)

// TestOrderEntryInTheStack places orders through the stack's REST base:
// the demo seller offers a whole block it was issued, a user funded
// through a deposit on the dev chain and a transfer buys it, and the
// matcher's trade is settled; another buy is cancelled through the cancel
// route and its reservation comes back. Nothing but the REST interface
// and the dev chain is used to fund and trade, so the ledger audit holds
// at the end, quiescent checks included. Every answer carries the
// matcher's decision: resting, filled with its fee and price, rejected,
// cancelled.
func TestOrderEntryInTheStack(t *testing.T) {
	t.Parallel()
	// The answers are read for the matcher's decision: the longest answer
	// wait, so that a loaded machine's slower matcher still decides
	// within it (an answer comes as soon as the decision does).
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "1s", "ORDER_ANSWER_WAIT": "5s"})
	ctx := t.Context()
	c := client{t: t, base: s.Addresses().REST}
	buyer, seller := logIn(t, c, newWallet(t)), logIn(t, c, demoWallet(t))
	s.fund(buyer, 1, "3", "3")

	// A whole-block market with time left: the newest one listed.
	var slot uint64
	poll.Until(t, "an open whole-block market", func() bool {
		for _, m := range markets(t, c.base+"/api/v1/p/wholeblock/markets") {
			if m.Status == topics.MarketStatusOpen && time.UnixMilli(m.MaturityTime).After(time.Now().Add(30*time.Second)) {
				slot = max(slot, m.Slot)
			}
		}
		return slot != 0
	})
	instrument := topics.InstrumentID(topics.WholeBlock, slot)
	order := func(tr *trader, buy bool, price string) map[string]any {
		return map[string]any{"accountId": tr.preconf, "instrumentId": instrument, "side": buy, "orderType": 2, "quantity": "1", "price": price}
	}
	sellAnswer := seller.placeAnswer(order(seller, false, "0.5"))
	if sellAnswer["status"] != float64(topics.OrderStatusOnBook) || sellAnswer["fulfilled"] != "0" {
		t.Fatalf("the sell's answer, want it resting (status 1): %v", sellAnswer)
	}
	sell := int64(sellAnswer["orderId"].(float64))
	buyAnswer := buyer.placeAnswer(order(buyer, true, "0.5"))
	if buyAnswer["status"] != float64(topics.OrderStatusDone) || buyAnswer["fulfilled"] != "1" || buyAnswer["fees"] != "0.0005" ||
		buyAnswer["averageTradePrice"] != "0.5" || buyAnswer["preconfQuantity"] == nil || buyAnswer["errorCode"] != nil {
		t.Fatalf("the buy's answer, want it filled (status 10) at 0.5 with fee 0.0005: %v", buyAnswer)
	}
	buy := int64(buyAnswer["orderId"].(float64))
	// A sell of a block the seller does not hold: the matcher refuses it.
	nobody := logIn(t, c, newWallet(t))
	refused := nobody.placeAnswer(order(nobody, false, "0.9"))
	if refused["status"] != float64(topics.OrderStatusError) || refused["errorCode"] != float64(topics.CodeInsufficientPosition) || refused["message"] == nil {
		t.Fatalf("a sell without the block, want status 99 code 125: %v", refused)
	}
	done := func(id int64, status int) func() bool {
		return func() bool {
			var st int
			var released bool
			err := s.pool.QueryRow(ctx, `SELECT status, released FROM orders WHERE order_id = $1`, id).Scan(&st, &released)
			return err == nil && st == status && released
		}
	}
	poll.Until(t, "the sell filled and settled", done(sell, topics.OrderStatusDone))
	poll.Until(t, "the buy filled and settled", done(buy, topics.OrderStatusDone))
	fee := decimal.RequireFromString("0.0005") // 0.5 × the regular buy fee rate 0.001
	if q, l := s.balance(t, buyer.preconf); !q.Equal(decimal.RequireFromString("3").Sub(decimal.RequireFromString("0.5")).Sub(fee)) || !l.IsZero() {
		t.Fatalf("buyer holds %s, locked %s", q, l)
	}

	// A buy that rests, cancelled through REST: the matcher cancels it and
	// the settler unlocks its reservation.
	resting := buyer.place(order(buyer, true, "0.1"))
	if _, l := s.balance(t, buyer.preconf); !l.Equal(decimal.RequireFromString("0.1001")) {
		t.Fatalf("the resting buy locked %s", l)
	}
	var cancel struct {
		Items []struct {
			OrderID int64 `json:"orderId"`
			Code    int   `json:"code"`
			Status  *int  `json:"status"`
		}
	}
	buyer.call("POST", "/api/v1/wholeblock/cancel-order", map[string]any{"accountId": buyer.preconf, "instrumentId": instrument, "orderId": resting}, &cancel)
	if len(cancel.Items) != 1 || cancel.Items[0].OrderID != resting || cancel.Items[0].Code != 1 ||
		cancel.Items[0].Status == nil || *cancel.Items[0].Status != topics.OrderStatusCancelledByUser {
		t.Fatalf("cancel, want code 1 and status 11: %+v", cancel.Items)
	}
	poll.Until(t, "the resting buy cancelled and released", done(resting, topics.OrderStatusCancelledByUser))
	if _, l := s.balance(t, buyer.preconf); !l.IsZero() {
		t.Fatalf("locked %s after the cancel", l)
	}
	if v, err := settler.AuditQuiescent(ctx, s.pool, 10); err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}

// demoWallet is the wallet of the demo seller, whose validator proposes
// every slot of the dev beacon.
func demoWallet(t *testing.T) wallet {
	key, err := crypto.HexToECDSA(devchain.DemoUserKey[2:])
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
