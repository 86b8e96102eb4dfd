package settlement

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// Result counts what one Apply did and names the balances and positions
// it changed, for the account feed.
type Result struct {
	Opens    int // market.open commands that named a slot's seller
	Issued   int // slots issued to their seller
	Statuses int // market.status events
	Events   int // order events that changed an order
	Stale    int // order events older than the order's state, or about an order that cannot be stored
	Fills    int // fills settled
	// Duplicates are fills settled (or refused) before, or twice in the
	// batch.
	Duplicates int
	Parked     int // fills kept until their slot is issued
	Rejected   int // fills refused: their journal entry says why
	Released   int // orders whose settlement ended (a buy's unused reservation unlocked)
	Invalid    int // records of other types that could not be decoded or applied

	// Entries are the journal entries of the settled fills; Balances the
	// user balances changed (by fills and released reservations);
	// Positions every position written.
	Entries   []int64
	Balances  []ledger.BalanceKey
	Positions []PositionKey
}

// Apply applies recs in tx, in one pass over a few set-based statements:
// market.open and market.status to the slots (issuing a slot to its
// seller), order events to the orders, fills to trades, positions, orders
// and the ledger, then the releases of orders whose settlement ended. The
// caller stores the consumer offsets in the same transaction.
//
// Locks are taken in one order in every transaction: trading_slots,
// parked_fills, journal, orders, positions, then balances, each in key
// order, so that concurrent settlers cannot deadlock.
func Apply(ctx context.Context, tx pgx.Tx, sys ledger.System, recs []Record, log *slog.Logger) (Result, error) {
	a := &applier{tx: tx, sys: sys, log: log, book: ledger.NewBook(tx)}
	err := a.run(ctx, recs)
	return a.res, err
}

type applier struct {
	tx   pgx.Tx
	sys  ledger.System
	log  *slog.Logger
	book *ledger.Book
	res  Result

	owners    map[int64]int64 // account → user
	slots     map[int64]*slot
	orders    map[int64]*order
	positions positionSet
	trades    []*Fill
}

// owns reports whether account exists and belongs to user.
func (a *applier) owns(account, user int64) bool {
	u, ok := a.owners[account]
	return ok && u == user
}

func (a *applier) run(ctx context.Context, recs []Record) error {
	var opens, statuses, events, fills, refused []*Record
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Invalid != "" && r.Type == topics.TypeTradeExecuted:
			refused = append(refused, r)
		case r.Invalid != "":
			a.res.Invalid++
			a.log.Warn("trading record not applied", "id", r.ID, "type", r.Type, "reason", r.Invalid)
		case r.Open != nil:
			opens = append(opens, r)
		case r.Status != nil:
			statuses = append(statuses, r)
		case r.Event != nil:
			events = append(events, r)
		case r.Fill != nil:
			fills = append(fills, r)
		case r.CancelRejected != nil:
			c := r.CancelRejected
			a.log.Info("cancel rejected", "command", c.CommandID, "account", c.AccountID, "order", c.OrderID, "clientOrderId", c.ClientOrderID, "code", c.Code)
		}
	}
	if err := a.loadOwners(ctx, opens, events, fills); err != nil {
		return err
	}
	if err := a.applySlots(ctx, opens, statuses, fills); err != nil {
		return err
	}
	ready, err := a.triage(ctx, fills)
	if err != nil {
		return err
	}
	if err := a.loadOwners(ctx, nil, nil, ready); err != nil { // fills unparked from earlier batches
		return err
	}
	fresh, err := a.claim(ctx, ready, refused)
	if err != nil {
		return err
	}
	if err := a.applyEvents(ctx, events, fresh); err != nil {
		return err
	}
	if err := a.lockPositionsAndBalances(ctx, events, fresh); err != nil {
		return err
	}
	a.issue()
	for _, r := range fresh {
		if err := a.settle(r); err != nil {
			return err
		}
	}
	if err := a.release(); err != nil {
		return err
	}
	a.expire()
	return a.write(ctx)
}

// loadOwners reads the owner of every account the records name that it
// has not read yet.
func (a *applier) loadOwners(ctx context.Context, opens, events, fills []*Record) error {
	var ids []int64
	for _, r := range opens {
		ids = append(ids, r.Open.SellerAccountID)
	}
	for _, r := range events {
		ids = append(ids, r.Event.AccountID)
	}
	for _, r := range fills {
		ids = append(ids, r.Fill.buyer.account, r.Fill.seller.account)
	}
	if a.owners == nil {
		a.owners = make(map[int64]int64, len(ids))
	}
	ids = slices.DeleteFunc(ids, func(id int64) bool { _, known := a.owners[id]; return known })
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := a.tx.Query(ctx, `SELECT account_id, user_id FROM accounts WHERE account_id = ANY($1) AND user_id IS NOT NULL`, ids)
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	var id, user int64
	_, err = pgx.ForEachRow(rows, []any{&id, &user}, func() error {
		a.owners[id] = user
		return nil
	})
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	return nil
}

// applySlots locks the slots of the batch and applies market.open and
// market.status to them.
func (a *applier) applySlots(ctx context.Context, opens, statuses, fills []*Record) error {
	var ns []int64
	for _, r := range opens {
		ns = append(ns, int64(r.Open.Slot))
	}
	for _, r := range statuses {
		ns = append(ns, int64(r.Status.Slot))
	}
	for _, r := range fills {
		ns = append(ns, int64(r.Fill.Slot))
	}
	var err error
	if a.slots, err = loadSlots(ctx, a.tx, ns); err != nil {
		return err
	}
	for _, r := range opens {
		if a.slots[int64(r.Open.Slot)].open(r.Open, a.owns) {
			a.res.Opens++
		} else if s := a.slots[int64(r.Open.Slot)]; s.sellerAccount == 0 {
			a.log.Warn("market.open opens no market or names a seller that is not the account's owner; the slot waits for another", "id", r.ID,
				"seller", r.Open.SellerUserID, "account", r.Open.SellerAccountID)
		}
	}
	for _, r := range statuses {
		a.slots[int64(r.Status.Slot)].status(r.Status.Status, r.At)
		a.res.Statuses++
	}
	return writeSlots(ctx, a.tx, a.slots)
}

// triage parks the fills of slots not issued yet and returns the others,
// with the fills parked earlier for the slots this batch issued, in trade
// id order (the matcher's order within a slot) without repeats.
func (a *applier) triage(ctx context.Context, fills []*Record) ([]*Record, error) {
	var issued []int64
	for n, s := range a.slots {
		if s.issuedNow {
			issued = append(issued, n)
		}
	}
	ready, err := unpark(ctx, a.tx, issued)
	if err != nil {
		return nil, err
	}
	var waiting []*Record
	for _, r := range fills {
		if a.slots[int64(r.Fill.Slot)].issued {
			ready = append(ready, r)
		} else {
			waiting = append(waiting, r)
		}
	}
	if err := park(ctx, a.tx, waiting); err != nil {
		return nil, err
	}
	a.res.Parked = len(waiting)
	slices.SortStableFunc(ready, func(x, y *Record) int { return cmp.Compare(x.Fill.TradeID, y.Fill.TradeID) })
	return slices.CompactFunc(ready, func(x, y *Record) bool {
		if x.Fill.TradeID == y.Fill.TradeID {
			a.res.Duplicates++
			return true
		}
		return false
	}), nil
}

// fillID is the journal command id of a fill.
func fillID(tradeID int64) string { return "fill:" + strconv.FormatInt(tradeID, 10) }

// claim takes a journal entry for each fill not settled before and for
// each fill record that cannot be applied, which is refused at once.
func (a *applier) claim(ctx context.Context, ready, refused []*Record) ([]*Record, error) {
	entries := make([]ledger.Entry, 0, len(ready)+len(refused))
	for _, r := range ready {
		entries = append(entries, ledger.Entry{ID: fillID(r.Fill.TradeID), Kind: r.Type, At: r.At})
	}
	seen := map[string]bool{}
	for _, r := range refused {
		if !seen[r.ID] {
			seen[r.ID] = true
			entries = append(entries, ledger.Entry{ID: r.ID, Kind: r.Type, At: r.At})
		}
	}
	claimed, err := a.book.Claim(ctx, entries)
	if err != nil {
		return nil, err
	}
	fresh := ready[:0:0]
	for _, r := range ready {
		if entry, ok := claimed[fillID(r.Fill.TradeID)]; ok {
			fresh = append(fresh, r)
			a.res.Entries = append(a.res.Entries, entry)
		} else {
			a.res.Duplicates++
		}
	}
	for id := range seen {
		if _, ok := claimed[id]; ok {
			a.book.Reject(id, "undecodable fill: "+refusedReason(refused, id))
			a.res.Rejected++
			a.log.Error("fill refused", "id", id, "reason", refusedReason(refused, id))
		} else {
			a.res.Duplicates++
		}
	}
	return fresh, nil
}

func refusedReason(refused []*Record, id string) string {
	for _, r := range refused {
		if r.ID == id {
			return clean(r.Invalid, maxRejection)
		}
	}
	return ""
}

// maxRejection bounds a journal reason written by this package.
const maxRejection = 400

// applyEvents locks the orders the batch names and applies the order
// events to them in log order.
func (a *applier) applyEvents(ctx context.Context, events, fills []*Record) error {
	ids := make([]int64, 0, len(events)+2*len(fills))
	for _, r := range events {
		ids = append(ids, r.Event.OrderID)
	}
	for _, r := range fills {
		ids = append(ids, r.Fill.TakerOrderID, r.Fill.MakerOrderID)
	}
	slices.Sort(ids)
	var err error
	if a.orders, err = loadOrders(ctx, a.tx, slices.Compact(ids)); err != nil {
		return err
	}
	for _, r := range events {
		ev := r.Event
		o := a.orders[ev.OrderID]
		if o == nil {
			if o = a.orderFromEvent(r); o == nil {
				a.res.Stale++
				continue
			}
			a.orders[o.id] = o
		}
		if o.applyEvent(ev, r.At) {
			a.res.Events++
		} else {
			a.res.Stale++
		}
	}
	return nil
}

// orderFromEvent returns the row of an order ingress never wrote, or nil
// when the event cannot make one (an account that is not the user's, a
// malformed instrument).
func (a *applier) orderFromEvent(r *Record) *order {
	ev := r.Event
	if _, _, err := topics.ParseInstrumentID(ev.InstrumentID); err != nil || !a.owns(ev.AccountID, ev.UserID) {
		a.log.Warn("order event about an unknown order that cannot be stored", "id", r.ID, "order", ev.OrderID,
			"account", ev.AccountID, "user", ev.UserID, "instrument", ev.InstrumentID)
		return nil
	}
	return orderFromEvent(ev, r.At)
}

// lockPositionsAndBalances locks the positions and balances the batch may
// change.
func (a *applier) lockPositionsAndBalances(ctx context.Context, events, fills []*Record) error {
	var keys []PositionKey
	var expiring []string
	for _, s := range a.slots {
		inst := s.instruments()
		if s.issuedNow {
			keys = append(keys, PositionKey{s.sellerAccount, inst[0]}, PositionKey{s.sellerAccount, inst[1]})
		}
		if s.expiring {
			expiring = append(expiring, inst[0], inst[1])
		}
	}
	for _, r := range events {
		if o := a.orders[r.Event.OrderID]; o != nil && !o.buy {
			keys = append(keys, PositionKey{o.account, o.instrument})
		}
	}
	balances := []ledger.BalanceKey{{Account: a.sys.Fees, Token: 1}}
	for _, r := range fills {
		f := r.Fill
		keys = append(keys, PositionKey{f.buyer.account, f.InstrumentID}, PositionKey{f.seller.account, f.InstrumentID})
		if f.family == topics.WholeBlock {
			pc := topics.InstrumentID(topics.InclusionPreconf, f.Slot)
			keys = append(keys, PositionKey{f.buyer.account, pc}, PositionKey{f.seller.account, pc})
		}
		// A fill naming an account that does not exist is refused; its
		// accounts have no balance to lock.
		if a.owns(f.buyer.account, f.buyer.user) && a.owns(f.seller.account, f.seller.user) {
			balances = append(balances, ledger.BalanceKey{Account: f.buyer.account, Token: 1}, ledger.BalanceKey{Account: f.seller.account, Token: 1})
		}
	}
	for _, o := range a.orders {
		if o.buy && !o.released {
			balances = append(balances, ledger.BalanceKey{Account: o.account, Token: o.token})
		}
	}
	var err error
	if a.positions, err = loadPositions(ctx, a.tx, keys, expiring); err != nil {
		return err
	}
	return a.book.Lock(ctx, balances)
}

// issue gives each slot issued by this batch to its seller: the whole
// block and the slot's preconf gas.
func (a *applier) issue() {
	for _, s := range a.slots {
		if !s.issuedNow {
			continue
		}
		inst := s.instruments()
		wb := a.positions.get(PositionKey{s.sellerAccount, inst[0]})
		pc := a.positions.get(PositionKey{s.sellerAccount, inst[1]})
		wb.quantity = wb.quantity.Add(decimal.NewFromInt(1))
		pc.quantity = pc.quantity.Add(decimal.NewFromInt(s.totalPreconf))
		wb.touch(s.openedAt)
		pc.touch(s.openedAt)
		a.res.Issued++
	}
}

// expire marks the positions of slots whose trading closed as expired, as
// of the status that closed it: those this batch closed, and those a fill
// of a closed slot created.
func (a *applier) expire() {
	for _, p := range a.positions {
		if s := a.slots[p.slot]; s != nil && s.expired() {
			p.expired = true
			p.touch(s.closedAt)
		}
	}
}
