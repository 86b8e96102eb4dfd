package settlement

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// order is an orders row as the batch changes it.
type order struct {
	id, user, account, market int64
	instrument                string
	slot                      int64
	buy                       bool
	// orderType 0 marks a row created from a fill before any event of
	// the order: its descriptive fields wait for the first event.
	orderType     int
	price         *decimal.Decimal
	quantity      decimal.Decimal
	fulfilled     decimal.Decimal
	fees          decimal.Decimal
	status        int
	errorCode     *int
	reason        string
	clientOrderID *string
	passive       bool
	source        int
	token         int64
	// Funds side of a buy (migration 0006).
	reserved, spent       decimal.Decimal
	released              bool
	settled, settledValue decimal.Decimal
	created, updated      time.Time

	isNew bool // not in the table yet
	dirty bool
}

func knownStatus(status int) bool {
	return topics.IsLiveOrderStatus(status) || topics.IsFinalOrderStatus(status)
}

// rank orders the statuses an order goes through: pending, on the book,
// partially filled, final.
func rank(status int) int {
	switch status {
	case topics.OrderStatusPending:
		return 0
	case topics.OrderStatusOnBook:
		return 1
	case topics.OrderStatusPartiallyFilled:
		return 2
	}
	return 3
}

// maxReason bounds what an event's reason or message may take in a row.
const maxReason = 200

// applyEvent takes the state an event carries if it is newer than the
// row's: a final status, more fulfilled, or a later status at the same
// fulfilled quantity. A row in a final status never changes, so an event
// delivered again, or late, changes nothing.
func (o *order) applyEvent(ev *Event, at time.Time) bool {
	if o.orderType == 0 {
		o.describe(ev, at)
	}
	if topics.IsFinalOrderStatus(o.status) {
		return false
	}
	newer := topics.IsFinalOrderStatus(ev.Status) || ev.fulfilled.GreaterThan(o.fulfilled) ||
		(ev.fulfilled.Equal(o.fulfilled) && rank(ev.Status) > rank(o.status))
	if !newer {
		return false
	}
	o.status = ev.Status
	if ev.fulfilled.GreaterThan(o.fulfilled) {
		o.fulfilled = ev.fulfilled
	}
	o.errorCode = nil
	if ev.ErrorCode != nil {
		code := *ev.ErrorCode
		o.errorCode = &code
	}
	o.reason = ev.Reason
	if o.reason == "" {
		o.reason = ev.Message
	}
	o.reason = clean(o.reason, maxReason)
	o.touch(at)
	return true
}

// describe fills the descriptive fields of a row that a fill created.
func (o *order) describe(ev *Event, at time.Time) {
	o.orderType, o.price, o.quantity, o.passive = ev.OrderType, ev.price, ev.quantity, ev.Passive
	o.clientOrderID = clientOrderID(ev.ClientOrderID)
	if at.Before(o.created) {
		o.created = at
	}
	o.dirty = true
}

// clientOrderID is the column value of a client order id: NULL when
// absent or longer than the column allows (the matcher rejected such an
// order; the row keeps the rest).
func clientOrderID(s string) *string {
	s = clean(s, maxClientOrderID)
	if s == "" || utf8.RuneCountInString(s) > 32 {
		return nil
	}
	return &s
}

// maxClientOrderID bounds the bytes of a client order id before its
// characters are counted.
const maxClientOrderID = 32 * utf8.UTFMax

// clean makes s storable as Postgres text of at most n bytes: no NUL byte,
// not cut inside a character.
func clean(s string, n int) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// settle records one of the order's fills: value and fee, and for a buy
// what the fill took out of the reservation.
func (o *order) settle(f *Fill, buyer bool) {
	fee := f.sellerFee
	if buyer {
		fee = f.buyerFee
		o.spent = o.spent.Add(f.value).Add(fee)
	}
	o.settled = o.settled.Add(f.quantity)
	o.settledValue = o.settledValue.Add(f.value)
	o.fees = o.fees.Add(fee)
	if o.orderType == 0 && o.settled.GreaterThan(o.quantity) {
		o.quantity = o.settled
	}
	o.touch(f.at)
}

func (o *order) touch(at time.Time) {
	if at.After(o.updated) {
		o.updated = at
	}
	o.dirty = true
}

// releasable reports an order whose settlement is over: final status,
// every fill it reported settled, and not released yet.
func (o *order) releasable() bool {
	return !o.released && topics.IsFinalOrderStatus(o.status) && o.settled.Equal(o.fulfilled)
}

// unused is the part of a buy's reservation its fills did not take.
func (o *order) unused() decimal.Decimal {
	if !o.buy || o.spent.GreaterThanOrEqual(o.reserved) {
		return decimal.Zero
	}
	return o.reserved.Sub(o.spent)
}

// averagePrice is the value-weighted price of the settled fills, rounded
// to 18 decimals (wei), or NULL before the first fill.
func (o *order) averagePrice() pgtype.Numeric {
	if !o.settled.IsPositive() {
		return pgtype.Numeric{}
	}
	return numeric(o.settledValue.DivRound(o.settled, 18))
}

// numeric is d as Postgres' numeric, sent in binary: no decimal text to
// format and parse.
func numeric(d decimal.Decimal) pgtype.Numeric {
	return pgtype.Numeric{Int: d.Coefficient(), Exp: d.Exponent(), Valid: true}
}

// orderFromEvent is the row of an order ingress never wrote.
func orderFromEvent(ev *Event, at time.Time) *order {
	market := ev.MarketID
	if market == 0 {
		if fam, slot, err := topics.ParseInstrumentID(ev.InstrumentID); err == nil {
			market = topics.MarketID(fam, slot)
		}
	}
	o := &order{id: ev.OrderID, user: ev.UserID, account: ev.AccountID, market: market, instrument: ev.InstrumentID,
		slot: int64(ev.Slot), buy: ev.Side, source: 1, token: 1, created: at, updated: at, isNew: true}
	o.describe(ev, at)
	return o
}

// orderFromFill is a placeholder row for an order whose fill came before
// any of its events and that ingress never wrote; its first event
// describes it.
func orderFromFill(f *Fill, s side) *order {
	return &order{id: s.order, user: s.user, account: s.account, market: f.MarketID, instrument: f.InstrumentID,
		slot: int64(f.Slot), buy: s == f.buyer, quantity: f.quantity, source: 1, token: 1,
		created: f.at, updated: f.at, isNew: true, dirty: true}
}

// loadOrders reads and locks the rows of ids in id order.
func loadOrders(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]*order, error) {
	out := make(map[int64]*order, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type, price, quantity,
		       fulfilled, fees, status, error_code, reason, client_order_id, passive, source, token_id,
		       reserved, spent, released, settled_quantity, settled_value, create_date, update_date
		FROM orders WHERE order_id = ANY($1) ORDER BY order_id FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	for rows.Next() {
		o := &order{}
		var price decimal.NullDecimal
		var code *int32
		if err := rows.Scan(&o.id, &o.user, &o.account, &o.market, &o.instrument, &o.slot, &o.buy, &o.orderType, &price, &o.quantity,
			&o.fulfilled, &o.fees, &o.status, &code, &o.reason, &o.clientOrderID, &o.passive, &o.source, &o.token,
			&o.reserved, &o.spent, &o.released, &o.settled, &o.settledValue, &o.created, &o.updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read orders: %w", err)
		}
		if price.Valid {
			o.price = &price.Decimal
		}
		if code != nil {
			c := int(*code)
			o.errorCode = &c
		}
		out[o.id] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	return out, nil
}

// writeOrders inserts the new rows and updates the changed ones with one
// statement.
func writeOrders(ctx context.Context, tx pgx.Tx, orders map[int64]*order) error {
	var c orderColumns
	for _, o := range orders {
		if o.dirty {
			c.add(o)
		}
	}
	if len(c.id) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type, price, quantity,
		                    fulfilled, average_trade_price, fees, status, error_code, reason, client_order_id, passive, source,
		                    token_id, spent, released, settled_quantity, settled_value, create_date, update_date)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::bool[],
		                     $8::smallint[], $9::numeric[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[],
		                     $14::smallint[], $15::int[], $16::text[], $17::text[], $18::bool[], $19::smallint[], $20::int[],
		                     $21::numeric[], $22::bool[], $23::numeric[], $24::numeric[], $25::timestamptz[], $26::timestamptz[])
		ORDER BY 1
		ON CONFLICT (order_id) DO UPDATE SET
		    order_type = EXCLUDED.order_type, price = EXCLUDED.price, quantity = EXCLUDED.quantity,
		    client_order_id = EXCLUDED.client_order_id, passive = EXCLUDED.passive,
		    fulfilled = EXCLUDED.fulfilled, average_trade_price = EXCLUDED.average_trade_price, fees = EXCLUDED.fees,
		    status = EXCLUDED.status, error_code = EXCLUDED.error_code, reason = EXCLUDED.reason,
		    spent = EXCLUDED.spent, released = EXCLUDED.released, settled_quantity = EXCLUDED.settled_quantity,
		    settled_value = EXCLUDED.settled_value, create_date = EXCLUDED.create_date, update_date = EXCLUDED.update_date`,
		c.id, c.user, c.account, c.market, c.instrument, c.slot, c.buy, c.orderType, c.price, c.quantity,
		c.fulfilled, c.avg, c.fees, c.status, c.code, c.reason, c.clientID, c.passive, c.source,
		c.token, c.spent, c.released, c.settled, c.settledValue, c.created, c.updated)
	if err != nil {
		return fmt.Errorf("write orders: %w", err)
	}
	return nil
}

// orderColumns are the rows of writeOrders as column arrays.
type orderColumns struct {
	id, user, account, market, slot                                     []int64
	instrument, reason                                                  []string
	buy, passive, released                                              []bool
	orderType, status, source, token                                    []int32
	clientID                                                            []*string
	price, avg, quantity, fulfilled, fees, spent, settled, settledValue []pgtype.Numeric
	code                                                                []*int32
	created, updated                                                    []time.Time
}

func (c *orderColumns) add(o *order) {
	c.id, c.user, c.account, c.market, c.slot = append(c.id, o.id), append(c.user, o.user), append(c.account, o.account), append(c.market, o.market), append(c.slot, o.slot)
	c.instrument, c.reason = append(c.instrument, o.instrument), append(c.reason, o.reason)
	c.buy, c.passive, c.released = append(c.buy, o.buy), append(c.passive, o.passive), append(c.released, o.released)
	c.orderType, c.status = append(c.orderType, int32(o.orderType)), append(c.status, int32(o.status))
	c.source, c.token = append(c.source, int32(o.source)), append(c.token, int32(o.token))
	var price pgtype.Numeric
	if o.price != nil {
		price = numeric(*o.price)
	}
	c.price, c.avg, c.clientID = append(c.price, price), append(c.avg, o.averagePrice()), append(c.clientID, o.clientOrderID)
	c.quantity, c.fulfilled, c.fees = append(c.quantity, numeric(o.quantity)), append(c.fulfilled, numeric(o.fulfilled)), append(c.fees, numeric(o.fees))
	c.spent, c.settled, c.settledValue = append(c.spent, numeric(o.spent)), append(c.settled, numeric(o.settled)), append(c.settledValue, numeric(o.settledValue))
	var code *int32
	if o.errorCode != nil {
		v := int32(*o.errorCode)
		code = &v
	}
	c.code = append(c.code, code)
	c.created, c.updated = append(c.created, o.created), append(c.updated, o.updated)
}
