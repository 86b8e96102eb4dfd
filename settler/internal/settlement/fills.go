package settlement

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// settle applies one fill not settled before, or refuses it (its journal
// entry then says why) when the ledger or the positions cannot follow it:
// an account that is not its user's, a seller without the units, a buyer
// who cannot pay. A refusal changes nothing; the audit reports it.
//
// The buyer pays value + buyer fee out of its order's reservation (the
// part of its locked funds that order holds), and out of its available
// funds for what the reservation does not cover (an order that reached the
// log without ingress). Postings: buyer 1 (−value) and 15 (−buyer fee),
// seller 2 (+value) and 15 (−seller fee), fees account 15 (+both fees).
func (a *applier) settle(r *Record) error {
	f := r.Fill
	id := fillID(f.TradeID)
	if reason := a.check(f); reason != "" {
		a.book.Reject(id, clean(reason, maxRejection))
		a.res.Rejected++
		a.log.Error("fill refused", "id", id, "reason", reason)
		return nil
	}
	buyOrder, sellOrder := a.orderOf(f, f.buyer), a.orderOf(f, f.seller)
	cost := f.value.Add(f.buyerFee)
	take := a.fromReservation(buyOrder, cost)
	if take.LessThan(cost) {
		a.log.Warn("fill paid partly from available funds: the buy order's reservation does not cover it", "id", id,
			"order", buyOrder.id, "reserved", buyOrder.reserved, "spent", buyOrder.spent, "cost", cost)
	}
	if take.IsPositive() {
		if err := a.book.Release(f.buyer.account, 1, take); err != nil {
			return fmt.Errorf("settle fill %d: %w", f.TradeID, err)
		}
	}
	fees := f.buyerFee.Add(f.sellerFee)
	for _, p := range []struct {
		account int64
		amount  decimal.Decimal
		typ     int
	}{
		{f.buyer.account, f.value.Neg(), ledger.TypeBuy},
		{f.buyer.account, f.buyerFee.Neg(), ledger.TypeTradingFee},
		{f.seller.account, f.value, ledger.TypeSell},
		{f.seller.account, f.sellerFee.Neg(), ledger.TypeTradingFee},
		{a.sys.Fees, fees, ledger.TypeTradingFee},
	} {
		if err := a.book.Post(id, p.account, 1, p.amount, p.typ, f.at); err != nil {
			return fmt.Errorf("settle fill %d: %w", f.TradeID, err)
		}
	}
	a.res.Balances = append(a.res.Balances, ledger.BalanceKey{Account: f.buyer.account, Token: 1}, ledger.BalanceKey{Account: f.seller.account, Token: 1})
	a.move(f)
	buyOrder.settle(f, true)
	sellOrder.settle(f, false)
	a.trades = append(a.trades, f)
	a.res.Fills++
	return nil
}

// check returns why the fill cannot be applied, or "".
func (a *applier) check(f *Fill) string {
	if !a.owns(f.buyer.account, f.buyer.user) || !a.owns(f.seller.account, f.seller.user) {
		return fmt.Sprintf("fill %d: account %d of user %d or account %d of user %d does not exist",
			f.TradeID, f.buyer.account, f.buyer.user, f.seller.account, f.seller.user)
	}
	if held := a.held(f.seller.account, f.InstrumentID); held.LessThan(f.quantity) {
		return fmt.Sprintf("fill %d: seller account %d holds %s of %s, below %s", f.TradeID, f.seller.account, held, f.InstrumentID, f.quantity)
	}
	if pc := topics.InstrumentID(topics.InclusionPreconf, f.Slot); f.family == topics.WholeBlock {
		if held := a.held(f.seller.account, pc); held.LessThan(f.preconf) {
			return fmt.Sprintf("fill %d: seller account %d holds %s of %s, below the %s that go with the block", f.TradeID, f.seller.account, held, pc, f.preconf)
		}
	}
	for _, acc := range []int64{f.buyer.account, f.seller.account, a.sys.Fees} {
		if _, _, err := a.book.Balance(acc, 1); err != nil {
			return fmt.Sprintf("fill %d: %v", f.TradeID, err)
		}
	}
	cost := f.value.Add(f.buyerFee)
	rest := cost
	if o := a.orders[f.buyer.order]; o != nil {
		rest = cost.Sub(a.fromReservation(o, cost))
	}
	if q, l, _ := a.book.Balance(f.buyer.account, 1); rest.GreaterThan(q.Sub(l)) {
		return fmt.Sprintf("fill %d: buyer account %d cannot pay %s: its order's reservation covers %s and %s is available",
			f.TradeID, f.buyer.account, cost, cost.Sub(rest), q.Sub(l))
	}
	return ""
}

// held is what account holds of instrument so far in the batch.
func (a *applier) held(account int64, instrument string) decimal.Decimal {
	if p := a.positions[PositionKey{account, instrument}]; p != nil {
		return p.quantity
	}
	return decimal.Zero
}

// fromReservation is the part of cost the buy order's unused reservation
// pays: at most what the order reserved and has not spent, and at most
// the account's locked funds.
func (a *applier) fromReservation(o *order, cost decimal.Decimal) decimal.Decimal {
	take := decimal.Min(cost, o.unused())
	if _, locked, err := a.book.Balance(o.account, o.token); err == nil {
		take = decimal.Min(take, locked)
	} else {
		take = decimal.Zero
	}
	return decimal.Max(take, decimal.Zero)
}

// orderOf returns the order of one side of a fill, creating the row of an
// order the batch has no row for.
func (a *applier) orderOf(f *Fill, s side) *order {
	o := a.orders[s.order]
	if o == nil {
		o = orderFromFill(f, s)
		a.orders[o.id] = o
	}
	return o
}

// move moves the fill's units from seller to buyer, with the preconf gas
// of a whole block, and adds the purchase to the buyer's average price.
func (a *applier) move(f *Fill) {
	from := a.positions.get(PositionKey{f.seller.account, f.InstrumentID})
	to := a.positions.get(PositionKey{f.buyer.account, f.InstrumentID})
	from.quantity = from.quantity.Sub(f.quantity)
	to.quantity = to.quantity.Add(f.quantity)
	to.bought = to.bought.Add(f.quantity)
	to.boughtValue = to.boughtValue.Add(f.value)
	from.touch(f.at)
	to.touch(f.at)
	if f.family == topics.WholeBlock && f.preconf.IsPositive() {
		pc := topics.InstrumentID(topics.InclusionPreconf, f.Slot)
		from := a.positions.get(PositionKey{f.seller.account, pc})
		to := a.positions.get(PositionKey{f.buyer.account, pc})
		from.quantity = from.quantity.Sub(f.preconf)
		to.quantity = to.quantity.Add(f.preconf)
		from.touch(f.at)
		to.touch(f.at)
	}
}

// release ends the settlement of every order whose status is final and
// whose reported fills are all settled: a buy's unused reservation is
// unlocked, once, and released is set.
func (a *applier) release() error {
	ids := make([]int64, 0, len(a.orders))
	for id, o := range a.orders {
		if o.releasable() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		o := a.orders[id]
		if unused := o.unused(); unused.IsPositive() {
			_, locked, err := a.book.Balance(o.account, o.token)
			if err != nil {
				return fmt.Errorf("release order %d: %w", o.id, err)
			}
			if locked.LessThan(unused) {
				a.log.Error("an order's unused reservation exceeds its account's locked funds; unlocking what is locked",
					"order", o.id, "account", o.account, "unused", unused, "locked", locked)
				unused = locked
			}
			if err := a.book.Release(o.account, o.token, unused); err != nil {
				return fmt.Errorf("release order %d: %w", o.id, err)
			}
			a.res.Balances = append(a.res.Balances, ledger.BalanceKey{Account: o.account, Token: o.token})
		}
		o.released = true
		o.dirty = true
		a.res.Released++
	}
	return nil
}

// write stores everything the batch changed.
func (a *applier) write(ctx context.Context) error {
	if err := writeOrders(ctx, a.tx, a.orders); err != nil {
		return err
	}
	if err := a.writeTrades(ctx); err != nil {
		return err
	}
	if err := a.book.Write(ctx); err != nil {
		return err
	}
	keys, err := writePositions(ctx, a.tx, a.positions)
	a.res.Positions = keys
	return err
}

func (a *applier) writeTrades(ctx context.Context) error {
	n := len(a.trades)
	if n == 0 {
		return nil
	}
	slices.SortFunc(a.trades, func(x, y *Fill) int { return cmp.Compare(x.TradeID, y.TradeID) })
	ids, markets, slots, takers, makers, buyers, sellers := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	insts := make([]string, n)
	prices, qs, bfees, sfees, preconf := make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n)
	sides, primary := make([]bool, n), make([]bool, n)
	ats := make([]time.Time, n)
	for i, f := range a.trades {
		ids[i], markets[i], slots[i], takers[i], makers[i] = f.TradeID, f.MarketID, int64(f.Slot), f.TakerOrderID, f.MakerOrderID
		buyers[i], sellers[i] = f.buyer.account, f.seller.account
		insts[i], prices[i], qs[i], bfees[i], sfees[i] = f.InstrumentID, numeric(f.price), numeric(f.quantity), numeric(f.buyerFee), numeric(f.sellerFee)
		if f.family == topics.WholeBlock {
			preconf[i] = numeric(f.preconf)
		}
		sides[i], primary[i], ats[i] = f.Side, f.PrimarySale, f.at
	}
	_, err := a.tx.Exec(ctx, `
		INSERT INTO trades (trade_id, market_id, instrument_id, slot, price, quantity, preconf_quantity, side, primary_sale,
		                    taker_order_id, maker_order_id, buyer_account_id, seller_account_id, buyer_fee, seller_fee, executed_at)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::numeric[], $6::numeric[],
		                     $7::numeric[], $8::bool[], $9::bool[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[],
		                     $14::numeric[], $15::numeric[], $16::timestamptz[])
		ON CONFLICT (trade_id) DO NOTHING`,
		ids, markets, insts, slots, prices, qs, preconf, sides, primary, takers, makers, buyers, sellers, bfees, sfees, ats)
	if err != nil {
		return fmt.Errorf("insert trades: %w", err)
	}
	return nil
}
