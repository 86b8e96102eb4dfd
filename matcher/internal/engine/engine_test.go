package engine

import (
	"testing"

	"blockspace.exchange/topics"
)

const (
	gwei2 = "0.000000002"
	gwei3 = "0.000000003"
)

func TestRules(t *testing.T) {
	tests := []struct {
		name  string
		setup []any
		cmd   any
		want  string
	}{
		{
			name: "limit buy without a seller rests on the book",
			cmd:  buy(1, alice, inclusionID, "21000", gwei2),
			want: "accepted #1 st=1 fil=0",
		},
		{
			name:  "primary sale partially fills the maker at the maker's price",
			setup: []any{sell(1, seller, inclusionID, "100000", gwei2)},
			cmd:   buy(2, alice, inclusionID, "21000", gwei3),
			want: `accepted #2 st=0 fil=0
fill #1<-#2 0.000000002x21000 primary avail=900000 fees=0.000000042/0.000000084
filled #1 st=13 fil=21000
filled #2 st=10 fil=21000`,
		},
		{
			name: "a buyer's resale is a secondary sale",
			setup: []any{
				sell(1, seller, inclusionID, "100000", gwei2),
				buy(2, alice, inclusionID, "100000", gwei2),
				sell(3, alice, inclusionID, "21000", gwei3),
			},
			cmd: buy(4, bob, inclusionID, "21000", gwei3),
			want: `accepted #4 st=0 fil=0
fill #3<-#4 0.000000003x21000 secondary avail=900000 fees=0.000000063/0.0000000315
filled #3 st=10 fil=21000
filled #4 st=10 fil=21000`,
		},
		{
			name: "sell without a position",
			cmd:  sell(1, alice, inclusionID, "21000", gwei2),
			want: "rejected #1 st=99 fil=0 code=125",
		},
		{
			name:  "sell beyond the free position: the rest is locked by a resting sell",
			setup: []any{sell(1, seller, inclusionID, "1000000", gwei3)},
			cmd:   sell(2, seller, inclusionID, "21000", gwei2),
			want:  "rejected #2 st=99 fil=0 code=125",
		},
		{
			name: "whole block sold by someone who does not hold it",
			cmd:  sell(1, alice, wholeBlockID, "1", "1"),
			want: "rejected #1 st=99 fil=0 code=125",
		},
		{
			name:  "passive order that would trade is rejected",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei2)},
			cmd:   passive(buy(2, alice, inclusionID, "21000", gwei2)),
			want:  "rejected #2 st=99 fil=0 code=124",
		},
		{
			name:  "passive order below the ask rests",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei3)},
			cmd:   passive(buy(2, alice, inclusionID, "21000", gwei2)),
			want:  "accepted #2 st=1 fil=0",
		},
		{
			name:  "fill-or-kill the book cannot fill whole is cancelled without trading",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei2)},
			cmd:   fok(buy(2, alice, inclusionID, "42000", gwei2)),
			want: `accepted #2 st=0 fil=0
cancelled #2 st=12 fil=0 code=191 fill_or_kill`,
		},
		{
			name:  "fill-or-kill fills whole across prices",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei2), sell(2, seller, inclusionID, "21000", gwei3)},
			cmd:   fok(buy(3, alice, inclusionID, "42000", gwei3)),
			want: `accepted #3 st=0 fil=0
fill #1<-#3 0.000000002x21000 primary avail=958000 fees=0.000000042/0.000000084
filled #1 st=10 fil=21000
filled #3 st=13 fil=21000
fill #2<-#3 0.000000003x21000 primary avail=958000 fees=0.000000063/0.000000126
filled #2 st=10 fil=21000
filled #3 st=10 fil=42000`,
		},
		{
			name:  "market order without a price trades what it can and cancels the rest",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei2)},
			cmd:   marketOrder(buy(2, alice, inclusionID, "42000", "")),
			want: `accepted #2 st=0 fil=0
fill #1<-#2 0.000000002x21000 primary avail=979000 fees=0.000000042/0.000000084
filled #1 st=10 fil=21000
filled #2 st=13 fil=21000
cancelled #2 st=12 fil=21000 code=191 unfilled_remainder`,
		},
		{
			name:  "market order does not trade beyond its worst price",
			setup: []any{sell(1, seller, inclusionID, "21000", gwei3)},
			cmd:   marketOrder(buy(2, alice, inclusionID, "21000", gwei2)),
			want: `accepted #2 st=0 fil=0
cancelled #2 st=12 fil=0 code=191 unfilled_remainder`,
		},
		{
			name: "self-trade cancels the resting order of the same account and matching goes on",
			setup: []any{
				sell(1, seller, inclusionID, "100000", gwei2),
				buy(2, alice, inclusionID, "100000", gwei2),
				sell(3, alice, inclusionID, "21000", gwei3),
				sell(4, seller, inclusionID, "21000", gwei2),
			},
			cmd: buy(5, seller, inclusionID, "21000", gwei3),
			want: `accepted #5 st=0 fil=0
cancelled #4 st=12 fil=0 code=191 self_trade
fill #3<-#5 0.000000003x21000 secondary avail=921000 fees=0.000000063/0.0000000315
filled #3 st=10 fil=21000
filled #5 st=10 fil=21000`,
		},
		{
			name: "whole block carries the preconf gas not sold separately",
			setup: []any{
				sell(1, seller, inclusionID, "100000", gwei2),
				buy(2, alice, inclusionID, "100000", gwei2),
				sell(3, seller, inclusionID, "50000", gwei3),
				sell(4, seller, wholeBlockID, "1", "1.5"),
			},
			cmd: buy(5, bob, wholeBlockID, "1", "2"),
			want: `accepted #5 st=0 fil=0
fill #4<-#5 1.5x1 primary avail=850000 fees=0.0015/0.003 pre=850000
filled #4 st=10 fil=1
filled #5 st=10 fil=1`,
		},
		{
			name: "the whole block's buyer sells preconf gas as a secondary seller",
			setup: []any{
				sell(1, seller, wholeBlockID, "1", "1"),
				buy(2, bob, wholeBlockID, "1", "1"),
				buy(3, alice, inclusionID, "21000", gwei2),
			},
			cmd: sell(4, bob, inclusionID, "21000", gwei2),
			want: `accepted #4 st=0 fil=0
fill #3<-#4 0.000000002x21000 secondary avail=979000 fees=0.000000042/0.000000021
filled #3 st=10 fil=21000
filled #4 st=10 fil=21000`,
		},
		{
			name:  "the seller keeps preconf gas it offered when the block sells",
			setup: []any{sell(1, seller, inclusionID, "100000", gwei3), sell(2, seller, wholeBlockID, "1", "1"), buy(3, bob, wholeBlockID, "1", "1")},
			cmd:   buy(4, alice, inclusionID, "100000", gwei3),
			want: `accepted #4 st=0 fil=0
fill #1<-#4 0.000000003x100000 primary avail=900000 fees=0.0000003/0.0000006
filled #1 st=10 fil=100000
filled #4 st=10 fil=100000`,
		},
		// The rules of price, quantity, order type and client order id are
		// platform/market's (its TestCheck); one case shows the matcher applies them.
		{name: "price not a multiple of priceStep", cmd: buy(1, alice, inclusionID, "21000", "0.0000000025"), want: "rejected #1 st=99 fil=0 code=115"},
		{name: "no account", cmd: buy(1, 0, wholeBlockID, "1", "1"), want: "rejected #1 st=99 fil=0 code=102"},
		{name: "market of a slot never opened", cmd: buy(1, alice, "ETH-WB-101", "1", "1"), want: "rejected #1 st=99 fil=0 code=114"},
		{
			name:  "clientOrderId of a live order of the account",
			setup: []any{client(buy(1, alice, wholeBlockID, "1", "1"), "a")},
			cmd:   client(buy(2, alice, wholeBlockID, "1", "1"), "a"),
			want:  "rejected #2 st=99 fil=0 code=122",
		},
		{
			name:  "clientOrderId of another account is free",
			setup: []any{client(buy(1, alice, wholeBlockID, "1", "1"), "a")},
			cmd:   client(buy(2, bob, wholeBlockID, "1", "1"), "a"),
			want:  "accepted #2 st=1 fil=0",
		},
		{
			name:  "clientOrderId is free again once its order is cancelled",
			setup: []any{client(buy(1, alice, wholeBlockID, "1", "1"), "a"), topics.OrderCancel{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID, OrderID: 1}},
			cmd:   client(buy(2, alice, wholeBlockID, "1", "1"), "a"),
			want:  "accepted #2 st=1 fil=0",
		},
		{
			name:  "cancel by the user",
			setup: []any{buy(1, alice, wholeBlockID, "1", "1")},
			cmd:   topics.OrderCancel{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID, OrderID: 1},
			want:  "cancelled #1 st=11 fil=0 code=192 cancel",
		},
		{
			name:  "cancel by clientOrderId",
			setup: []any{client(buy(1, alice, wholeBlockID, "1", "1"), "mine")},
			cmd:   topics.OrderCancel{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID, ClientOrderID: "mine"},
			want:  "cancelled #1 st=11 fil=0 code=192 cancel",
		},
		{
			name:  "cancel of another account's order",
			setup: []any{buy(1, alice, wholeBlockID, "1", "1")},
			cmd:   topics.OrderCancel{UserID: 3, AccountID: bob, InstrumentID: wholeBlockID, OrderID: 1},
			want:  "cancel_rejected #1 code=108",
		},
		{
			name:  "cancel naming the other family's market",
			setup: []any{buy(1, alice, wholeBlockID, "1", "1")},
			cmd:   topics.OrderCancel{UserID: 2, AccountID: alice, InstrumentID: inclusionID, OrderID: 1},
			want:  "cancel_rejected #1 code=108",
		},
		{
			name:  "cancel of a filled order",
			setup: []any{sell(1, seller, wholeBlockID, "1", "1"), buy(2, alice, wholeBlockID, "1", "1")},
			cmd:   topics.OrderCancel{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID, OrderID: 2},
			want:  "cancel_rejected #2 code=109",
		},
		{
			name:  "cancel of a partly filled sell releases the rest of its position",
			setup: []any{sell(1, seller, inclusionID, "100000", gwei2), buy(2, alice, inclusionID, "21000", gwei2), topics.OrderCancel{UserID: 1, AccountID: seller, InstrumentID: inclusionID, OrderID: 1}},
			cmd:   sell(3, seller, inclusionID, "979000", gwei3),
			want: `accepted #3 st=1 fil=0
status ETH-WB-100 1 avail=0
status ETH-PC-100 1 avail=0`,
		},
		{
			name: "a resting sell of the block's holder reports the availablePreconf it leaves",
			cmd:  sell(1, seller, inclusionID, "100000", gwei2),
			want: `accepted #1 st=1 fil=0
status ETH-WB-100 1 avail=900000
status ETH-PC-100 1 avail=900000`,
		},
		{
			name:  "cancelling the holder's sell reports the gas back",
			setup: []any{sell(1, seller, inclusionID, "100000", gwei2)},
			cmd:   topics.OrderCancel{UserID: 1, AccountID: seller, InstrumentID: inclusionID, OrderID: 1},
			want: `cancelled #1 st=11 fil=0 code=192 cancel
status ETH-WB-100 1 avail=1000000
status ETH-PC-100 1 avail=1000000`,
		},
		{
			name:  "a holder's sell that trades at once is reported by its fill alone",
			setup: []any{buy(1, alice, inclusionID, "21000", gwei2)},
			cmd:   sell(2, seller, inclusionID, "21000", gwei2),
			want: `accepted #2 st=0 fil=0
fill #1<-#2 0.000000002x21000 primary avail=979000 fees=0.000000042/0.000000084
filled #1 st=10 fil=21000
filled #2 st=10 fil=21000`,
		},
		{
			name:  "a sell of another account leaves availablePreconf alone",
			setup: []any{sell(1, seller, inclusionID, "100000", gwei2), buy(2, alice, inclusionID, "100000", gwei2)},
			cmd:   sell(3, alice, inclusionID, "21000", gwei3),
			want:  "accepted #3 st=1 fil=0",
		},
		{
			name:  "cancel batch: ids, then client ids, a repeat answers 109, an unknown 108",
			setup: []any{buy(1, alice, wholeBlockID, "1", "1"), client(buy(2, alice, wholeBlockID, "1", "1"), "b")},
			cmd:   topics.OrderCancelBatch{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID, OrderIDs: []int64{1, 1, 7}, ClientOrderIDs: []string{"b", "zz"}},
			want: `cancelled #1 st=11 fil=0 code=192 cancel_batch
cancel_rejected #1 code=109
cancel_rejected #7 code=108
cancelled #2 st=11 fil=0 code=192 cancel_batch
cancel_rejected "zz" code=108`,
		},
		{
			name: "cancel all cancels the account's live orders in id order and nothing else",
			setup: []any{
				buy(5, alice, wholeBlockID, "1", "1"), buy(3, alice, wholeBlockID, "1", "2"),
				buy(4, bob, wholeBlockID, "1", "1"), buy(6, alice, inclusionID, "21000", gwei2),
			},
			cmd: topics.OrderCancelAll{UserID: 2, AccountID: alice, InstrumentID: wholeBlockID},
			want: `cancelled #3 st=11 fil=0 code=192 cancel_all
cancelled #5 st=11 fil=0 code=192 cancel_all`,
		},
		{
			name: "trading closed expires open orders in id order, then reports the status",
			setup: []any{
				buy(9, alice, wholeBlockID, "1", "1"), sell(2, seller, inclusionID, "100000", gwei3),
				buy(4, bob, inclusionID, "21000", gwei2), buy(1, alice, inclusionID, "21000", gwei3),
			},
			cmd: tick(topics.TickTradingClosed),
			want: `expired #9 st=14 fil=0
expired #2 st=14 fil=21000
expired #4 st=14 fil=0
status ETH-WB-100 2 avail=979000
status ETH-PC-100 2 avail=979000`,
		},
		{
			name:  "orders after trading closed are rejected",
			setup: []any{tick(topics.TickTradingClosed)},
			cmd:   buy(1, alice, wholeBlockID, "1", "1"),
			want:  "rejected #1 st=99 fil=0 code=114",
		},
		{
			name:  "a tick already applied changes nothing",
			setup: []any{tick(topics.TickSubmissionClosed)},
			cmd:   tick(topics.TickTradingClosed),
			want:  "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, c := range tt.setup {
				h.apply(c)
			}
			if got := h.run(tt.cmd); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// The two markets of a slot open at different times (64 and 32 slots
// ahead) and each market.open carries the fee schedule of its instant;
// ingress reserves a buy with its market's buyFeeRate, so a trade is
// charged its own market's rates, not those of the slot's first open.
func TestEachMarketChargesItsOwnFeeRates(t *testing.T) {
	h := &harness{t: t, e: New()}
	h.apply(marketOpen(testSlot, topics.WholeBlock))
	pc := marketOpen(testSlot, topics.InclusionPreconf)
	pc.BuyFeeRate, pc.PrimarySellFeeRate, pc.SecondarySellFeeRate = "0.0001", "0.001", "0.0002"
	h.apply(pc)
	h.apply(sell(1, seller, inclusionID, "21000", gwei2))
	h.e = copyBySnapshot(t, h.e) // a restored engine charges the same
	want := `accepted #2 st=0 fil=0
fill #1<-#2 0.000000002x21000 primary avail=979000 fees=0.0000000042/0.000000042
filled #1 st=10 fil=21000
filled #2 st=10 fil=21000`
	if got := h.run(buy(2, alice, inclusionID, "21000", gwei2)); got != want {
		t.Errorf("preconf trade:\n%s\nwant\n%s", got, want)
	}
	h.apply(sell(3, seller, wholeBlockID, "1", "1"))
	want = `accepted #4 st=0 fil=0
fill #3<-#4 1x1 primary avail=979000 fees=0.001/0.002 pre=979000
filled #3 st=10 fil=1
filled #4 st=10 fil=1`
	if got := h.run(buy(4, bob, wholeBlockID, "1", "1")); got != want {
		t.Errorf("whole-block trade:\n%s\nwant\n%s", got, want)
	}
}
