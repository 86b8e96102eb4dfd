package devstack

import (
	"blockspace.exchange/deploy/devchain"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/settler"
	"blockspace.exchange/topics"
)

// TestTradeSettlesInTheStack: the settler of the dev stack issues the demo
// validator's slots to its owner, and a whole block bought from it is
// settled: the buyer pays price and fee out of its reservation, the rest
// of the reservation is unlocked, the block and the slot's preconf gas
// move to the buyer, the buyer's account feed is published, and the audit
// passes. Orders are written and published as ingress does.
func TestTradeSettlesInTheStack(t *testing.T) {
	t.Parallel()
	s := startStackWith(t, worldTempDir(t), map[string]string{"SLOT_LENGTH": "1s"})
	ctx := t.Context()
	c := client{t: t, base: s.Addresses().REST}
	w := newWallet(t)
	sess, _ := w.login(t, c)
	var current, preconf int64
	for _, a := range sess.User.Accounts {
		if a.Type == 1 {
			current = a.AccountID
		} else {
			preconf = a.AccountID
		}
	}
	buyer := sess.User.UserID

	// Funds: a deposit as the chain watcher reports it, then a transfer.
	addr := strings.ToLower(w.addr)
	dep, err := topics.FundingEnvelope(topics.TypeDepositObserved, "deposit-1337-"+addr+"-0", time.Now(), topics.DepositObserved{
		ChainID: 1337, BlockHash: "0xb", TransactionHash: "0x" + strings.Repeat("ab", 32), Sender: addr, Depositor: addr,
		TokenID: 1, Quantity: "3", AmountWei: "3000000000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kafka.NewRecord(topics.FundingEvents, []byte(addr), dep)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.kcl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "deposit credited", func() bool { return s.quantity(t, current).Equal(decimal.NewFromInt(3)) })
	if a := c.do("POST", "/api/v1/user/account/transfer/token", url.Values{"fromAccountId": {fmt.Sprint(current)},
		"toAccountId": {fmt.Sprint(preconf)}, "tokenId": {"1"}, "quantity": {"3"}}, bearer(sess.AccessToken.Token)); a.status != 200 || !a.body.Success {
		t.Fatalf("transfer: %d %s", a.status, a.raw)
	}
	poll.Until(t, "transfer applied", func() bool { return s.quantity(t, preconf).Equal(decimal.NewFromInt(3)) })

	var seller, sellerAccount int64
	if err := s.pool.QueryRow(ctx, `SELECT u.user_id, a.account_id FROM users u JOIN accounts a ON a.user_id = u.user_id AND a.type = 2
		WHERE u.address = $1`, devchain.DemoUserAddress).Scan(&seller, &sellerAccount); err != nil {
		t.Fatal(err)
	}
	var slot uint64
	poll.Until(t, "a whole-block market issued to the demo seller", func() bool {
		err := s.pool.QueryRow(ctx, `SELECT s.slot FROM trading_slots s JOIN positions p ON p.slot = s.slot AND p.account_id = s.seller_account_id
			WHERE s.issued AND s.phase = 1 AND s.seller_account_id = $1 AND p.instrument_id = 'ETH-WB-' || s.slot AND p.quantity = 1
			ORDER BY s.slot DESC LIMIT 1`, sellerAccount).Scan(&slot)
		return err == nil
	})
	wb, pc := topics.InstrumentID(topics.WholeBlock, slot), topics.InstrumentID(topics.InclusionPreconf, slot)
	var totalPreconf int64
	if err := s.pool.QueryRow(ctx, `SELECT total_preconf FROM trading_slots WHERE slot = $1`, slot).Scan(&totalPreconf); err != nil {
		t.Fatal(err)
	}

	// Ingress: the rows (a buy's reservation, generous on the fee), then
	// the commands.
	price, reserved := decimal.RequireFromString("0.5"), decimal.RequireFromString("0.55")
	for _, o := range []struct {
		id, user, account int64
		buy               bool
		reserved          decimal.Decimal
	}{{7_000_001, seller, sellerAccount, false, decimal.Zero}, {7_000_002, buyer, preconf, true, reserved}} {
		if o.buy {
			if _, err := s.pool.Exec(ctx, `UPDATE account_balances SET locked = locked + $2 WHERE account_id = $1 AND token_id = 1 AND quantity - locked >= $2`,
				o.account, o.reserved); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type, price, quantity, reserved)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 2, $8, 1, $9)`, o.id, o.user, o.account, topics.MarketID(topics.WholeBlock, slot), wb, int64(slot),
			o.buy, price, o.reserved); err != nil {
			t.Fatal(err)
		}
		e, err := topics.OrderCommandEnvelope(topics.TypeOrderPlace, fmt.Sprintf("place-%d", o.id), time.Now(), topics.OrderPlace{
			OrderID: o.id, UserID: o.user, AccountID: o.account, InstrumentID: wb, Side: o.buy, OrderType: topics.OrderTypeLimit,
			Quantity: "1", Price: price.String()})
		if err != nil {
			t.Fatal(err)
		}
		layout, err := kafka.Layout(ctx, s.kcl, topics.Orders)
		if err != nil {
			t.Fatal(err)
		}
		r, err := kafka.NewSlotRecord(topics.Orders, layout, slot, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.kcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	poll.Until(t, "the trade settled and both orders released", func() bool {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE order_id IN (7000001, 7000002) AND released AND status = 10`).Scan(&n)
		return err == nil && n == 2
	})
	var fee decimal.Decimal
	var preconfMoved decimal.Decimal
	if err := s.pool.QueryRow(ctx, `SELECT buyer_fee, preconf_quantity FROM trades WHERE instrument_id = $1`, wb).Scan(&fee, &preconfMoved); err != nil {
		t.Fatal(err)
	}
	var q, l decimal.Decimal
	if err := s.pool.QueryRow(ctx, `SELECT quantity, locked FROM account_balances WHERE account_id = $1 AND token_id = 1`, preconf).Scan(&q, &l); err != nil {
		t.Fatal(err)
	}
	if !q.Equal(decimal.NewFromInt(3).Sub(price).Sub(fee)) || !l.IsZero() || !fee.Equal(price.Mul(decimal.RequireFromString("0.001"))) {
		t.Fatalf("buyer holds %s, locked %s, fee %s", q, l, fee)
	}
	checkPosition := func(account int64, inst string, want int64) {
		t.Helper()
		var got decimal.Decimal
		if err := s.pool.QueryRow(ctx, `SELECT quantity FROM positions WHERE account_id = $1 AND instrument_id = $2`, account, inst).Scan(&got); err != nil {
			t.Fatalf("position of %d in %s: %v", account, inst, err)
		}
		if !got.Equal(decimal.NewFromInt(want)) {
			t.Errorf("account %d holds %s of %s, want %d", account, got, inst, want)
		}
	}
	checkPosition(preconf, wb, 1)
	checkPosition(sellerAccount, wb, 0)
	checkPosition(preconf, pc, totalPreconf)
	checkPosition(sellerAccount, pc, 0)
	if !preconfMoved.Equal(decimal.NewFromInt(totalPreconf)) {
		t.Errorf("the trade moved %s preconf gas, the seller had %d", preconfMoved, totalPreconf)
	}

	// The buyer's feed: the trade (1) and its fee (15).
	types := map[string]bool{}
	cl, err := kafka.NewClient(kafka.Config{Brokers: s.brokers, ClientID: "feed-reader"},
		kgo.ConsumeTopics(topics.AccountEvents), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for readCtx.Err() == nil && !(types["1"] && types["15"]) {
		cl.PollFetches(readCtx).EachRecord(func(r *kgo.Record) {
			e, err := kafka.DecodeRecord(r)
			if err != nil || e.Type != topics.TypeTransactionPosted {
				return
			}
			p, err := topics.DecodeTransactionPosted(e)
			if err == nil && p.UserID == buyer && string(r.Key) == fmt.Sprint(buyer) {
				types[fmt.Sprint(p.Type)] = true
			}
		})
	}
	if !types["1"] || !types["15"] {
		t.Fatalf("the buyer's feed has transaction types %v", types)
	}
	v, err := settler.Audit(ctx, s.pool, 10)
	if err != nil || len(v) > 0 {
		t.Fatalf("audit: %v %v", v, err)
	}
}

func (s *running) quantity(t *testing.T, account int64) decimal.Decimal {
	t.Helper()
	var q decimal.Decimal
	if err := s.pool.QueryRow(context.Background(), `SELECT coalesce(sum(quantity), 0) FROM account_balances WHERE account_id = $1 AND token_id = 1`, account).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}
