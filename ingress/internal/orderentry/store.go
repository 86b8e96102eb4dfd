package orderentry

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// write is one attempt at storing a batch of checked orders in one
// transaction. Decisions are kept apart from the orders until the
// transaction commits, so a retried attempt starts from the same orders.
//
// The transaction takes two round trips to Postgres, each a pipeline of
// statements: BEGIN and the reads that lock what the batch depends on,
// then, after the decisions, the writes and COMMIT. Postgres's time per
// transaction is then mostly the commit, which the batch shares.
type write struct {
	orders []*order
	layout topics.SlotLayout
	at     time.Time
	ids    *idBlock

	refused   map[*order]refusal
	accepted  []*order
	orderIDs  []int64
	records   []*kgo.Record
	outboxIDs []int64

	// Read in the first round trip.
	liveClientIDs map[clientKey]bool
	available     map[int64]decimal.Decimal // ETH quantity − locked of buying accounts
}

type refusal struct {
	code    int
	message string
}

func (w *write) refuse(o *order, code int, format string, args ...any) {
	w.refused[o] = refusal{code, fmt.Sprintf(format, args...)}
}

// run is the transaction: refuse clientOrderIds in use, reserve the buys'
// funds (an order that does not fit is refused with 123 and writes
// nothing), allocate order ids, insert the order rows and the outbox rows
// of their commands.
func (w *write) run(ctx context.Context, pool *pgxpool.Pool) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("store orders: %w", err)
	}
	// A connection left inside the transaction (an error on the way) is
	// rolled back; one that cannot be is closed by Release.
	defer func() {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		conn.Release()
	}()
	w.refused = make(map[*order]refusal)
	reads := &pgx.Batch{}
	reads.Queue("BEGIN")
	w.queueReads(reads)
	if err := conn.SendBatch(ctx, reads).Close(); err != nil {
		return fmt.Errorf("store orders: read: %w", err)
	}
	locked := w.decide()
	if len(w.accepted) == 0 {
		_, err := conn.Exec(ctx, "COMMIT")
		return err
	}
	if w.orderIDs, err = w.ids.take(ctx, conn, len(w.accepted)); err != nil {
		return err
	}
	w.records = w.commands()
	writes := &pgx.Batch{}
	queueLock(writes, locked)
	w.queueInsertOrders(writes)
	outbox.QueueAll(writes, w.records, &w.outboxIDs)
	writes.Queue("COMMIT")
	if err := conn.SendBatch(ctx, writes).Close(); err != nil {
		return fmt.Errorf("store orders: write: %w", err)
	}
	return nil
}

// apply records the outcome in the orders once the transaction committed.
func (w *write) apply() {
	for o, r := range w.refused {
		o.code, o.message = r.code, r.message
	}
	for i, o := range w.accepted {
		o.id, o.created = w.orderIDs[i], w.at
	}
}

type clientKey struct {
	account int64
	id      string
}

// queueReads queues the reads the decisions need: the live orders'
// clientOrderIds the batch repeats, and the available ETH of the buying
// accounts, whose balance rows are locked (in account order, as every
// writer of several rows must) until the transaction ends, so the sums
// decided here are the sums the update adds.
func (w *write) queueReads(b *pgx.Batch) {
	var accounts []int64
	var ids []string
	buyers := make(map[int64]bool)
	for _, o := range w.orders {
		if o.item.ClientOrderID != "" {
			accounts, ids = append(accounts, o.item.AccountID), append(ids, o.item.ClientOrderID)
		}
		if o.reserve.IsPositive() {
			buyers[o.item.AccountID] = true
		}
	}
	w.liveClientIDs = make(map[clientKey]bool)
	if len(ids) > 0 {
		b.Queue(`SELECT account_id, client_order_id FROM orders
			WHERE account_id = ANY($1) AND client_order_id = ANY($2) AND status IN `+topics.LiveOrderStatusList(), accounts, ids).
			Query(func(rows pgx.Rows) error {
				var k clientKey
				_, err := pgx.ForEachRow(rows, []any{&k.account, &k.id}, func() error {
					w.liveClientIDs[k] = true
					return nil
				})
				return err
			})
	}
	w.available = make(map[int64]decimal.Decimal)
	if len(buyers) == 0 {
		return
	}
	sorted := make([]int64, 0, len(buyers))
	for id := range buyers {
		sorted = append(sorted, id)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	b.Queue(`SELECT account_id, quantity - locked FROM account_balances
		WHERE account_id = ANY($1) AND token_id = 1 ORDER BY account_id FOR UPDATE`, sorted).
		Query(func(rows pgx.Rows) error {
			var id int64
			var avail decimal.Decimal
			_, err := pgx.ForEachRow(rows, []any{&id, &avail}, func() error {
				w.available[id] = avail
				return nil
			})
			return err
		})
}

// decide judges the orders in batch order: a clientOrderId a live order
// of the account or an earlier order of the batch uses is refused with
// 122; a buy whose reservation exceeds what is left of its account's
// available ETH with 123. It returns the sums to lock per account.
func (w *write) decide() map[int64]decimal.Decimal {
	used := w.liveClientIDs
	locked := make(map[int64]decimal.Decimal)
	w.accepted = w.accepted[:0]
	for _, o := range w.orders {
		a := o.item.AccountID
		if k := (clientKey{a, o.item.ClientOrderID}); k.id != "" {
			if used[k] {
				w.refuse(o, topics.CodeClientOrderID, "clientOrderId %s is used by a live order of account %d", k.id, k.account)
				continue
			}
			used[k] = true
		}
		if o.reserve.IsPositive() {
			left, ok := w.available[a]
			if !ok || left.LessThan(o.reserve) {
				w.refuse(o, topics.CodeInsufficientFunds, "available ETH of account %d is below the %s this order reserves", a, o.reserve)
				continue
			}
			w.available[a] = left.Sub(o.reserve)
			locked[a] = locked[a].Add(o.reserve)
		}
		w.accepted = append(w.accepted, o)
	}
	return locked
}

// queueLock queues the statement that adds the sums to the locked ETH of
// their accounts, with the `quantity − locked ≥ R` guard; a guard that
// fails under the row lock is an error.
func queueLock(b *pgx.Batch, amounts map[int64]decimal.Decimal) {
	if len(amounts) == 0 {
		return
	}
	ids := make([]int64, 0, len(amounts))
	sums := make([]string, 0, len(amounts))
	for id, sum := range amounts {
		ids, sums = append(ids, id), append(sums, sum.String())
	}
	b.Queue(`
		UPDATE account_balances b SET locked = b.locked + v.r
		FROM unnest($1::bigint[], $2::text[]::numeric[]) AS v(account_id, r)
		WHERE b.account_id = v.account_id AND b.token_id = 1 AND b.quantity - b.locked >= v.r`, ids, sums).
		Exec(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() != int64(len(ids)) {
				return fmt.Errorf("reserve funds: %d of %d locked balances changed under the lock", tag.RowsAffected(), len(ids))
			}
			return nil
		})
}

// queueInsertOrders queues the one statement that writes the accepted
// orders' rows, status 0 (pending), with their reservations.
func (w *write) queueInsertOrders(b *pgx.Batch) {
	n := len(w.accepted)
	var (
		users, accounts, markets, slots   = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		instruments, quantities, reserves = make([]string, n), make([]string, n), make([]string, n)
		prices, clientIDs                 = make([]*string, n), make([]*string, n)
		sides, passives                   = make([]bool, n), make([]bool, n)
		types                             = make([]int16, n)
	)
	for i, o := range w.accepted {
		users[i], accounts[i], markets[i], slots[i] = o.userID, o.item.AccountID, o.market.ID, int64(o.market.Slot)
		instruments[i], quantities[i], reserves[i] = o.market.Instrument, o.qty.String(), o.reserve.String()
		prices[i], clientIDs[i] = o.priceText(), o.clientOrderID()
		sides[i], passives[i], types[i] = o.item.Side, o.item.Passive, int16(o.item.OrderType)
	}
	b.Queue(`
		INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type,
			price, quantity, client_order_id, passive, source, reserved, create_date, update_date)
		SELECT v.order_id, v.user_id, v.account_id, v.market_id, v.instrument_id, v.slot, v.side, v.order_type,
			v.price::numeric, v.quantity::numeric, v.client_order_id, v.passive, $14, v.reserved::numeric, $15, $15
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::boolean[],
			$8::smallint[], $9::text[], $10::text[], $11::text[], $12::boolean[], $13::text[])
			AS v(order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type,
			     price, quantity, client_order_id, passive, reserved)`,
		w.orderIDs, users, accounts, markets, instruments, slots, sides,
		types, prices, quantities, clientIDs, passives, reserves, SourceAPI, w.at)
}

// commands builds the order.place record of each accepted order, on its
// slot's partition of `orders`: the bytes kafka.NewSlotRecord makes of
// the command's envelope, encoded without reflection.
func (w *write) commands() []*kgo.Record {
	recs := make([]*kgo.Record, len(w.accepted))
	at := w.at.UnixMilli()
	for i, o := range w.accepted {
		id := w.orderIDs[i]
		cmd := topics.OrderPlace{
			OrderID: id, UserID: o.userID, AccountID: o.item.AccountID, InstrumentID: o.market.Instrument,
			Side: o.item.Side, OrderType: o.item.OrderType, Quantity: o.qty.String(),
			ClientOrderID: o.item.ClientOrderID, Passive: o.item.Passive, Source: SourceAPI,
		}
		if p := o.priceText(); p != nil {
			cmd.Price = *p
		}
		v := topics.AppendEnvelopeHead(make([]byte, 0, 320), topics.TypeOrderPlace, topics.OrderCommandVersion, PlaceCommandID(id), at)
		v = append(cmd.AppendJSON(v), '}')
		recs[i] = &kgo.Record{Topic: topics.Orders, Key: topics.SlotKey(o.market.Slot), Value: v,
			Partition: w.layout.Partition(o.market.Slot), Headers: placeHeaders()}
	}
	return recs
}

// placeHeaders returns the record headers of an order.place.
func placeHeaders() []kgo.RecordHeader {
	hs := topics.Envelope{Type: topics.TypeOrderPlace, Version: topics.OrderCommandVersion}.Headers()
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		out[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
	}
	return out
}

// PlaceCommandID is the command id (envelope id) of an order's
// order.place: the outbox republishes it unchanged and the matcher drops
// the duplicate.
func PlaceCommandID(orderID int64) string { return "order:" + strconv.FormatInt(orderID, 10) }

// SourceAPI is the order source of orders placed through the REST
// interface (docs/api.md "Values and identifiers").
const SourceAPI = 1

// orderIDBlock is the increment of the order_ids sequence
// (0006_trading.sql): one nextval reserves the ids [v, v+orderIDBlock).
const orderIDBlock = 1000

// idBlock hands out order ids from the block of the last nextval. Each
// committer lane has its own, used by one drain at a time.
type idBlock struct{ next, end int64 }

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// take returns n ids, drawing a new block when the current one is used
// up. Ids of a transaction that rolls back are skipped, never reused.
func (b *idBlock) take(ctx context.Context, q queryRower, n int) ([]int64, error) {
	out := make([]int64, 0, n)
	for len(out) < n {
		if b.next == b.end {
			var v int64
			if err := q.QueryRow(ctx, `SELECT nextval('order_ids')`).Scan(&v); err != nil {
				return nil, fmt.Errorf("next block of order ids: %w", err)
			}
			b.next, b.end = v, v+orderIDBlock
		}
		out = append(out, b.next)
		b.next++
	}
	return out, nil
}
