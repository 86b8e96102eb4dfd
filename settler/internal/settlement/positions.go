package settlement

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// PositionKey names one account's position in one market.
type PositionKey struct {
	Account    int64
	Instrument string
}

func comparePositionKeys(a, b PositionKey) int {
	if c := cmp.Compare(a.Account, b.Account); c != 0 {
		return c
	}
	return cmp.Compare(a.Instrument, b.Instrument)
}

// position is a positions row as the batch changes it.
type position struct {
	key          PositionKey
	market, slot int64
	quantity     decimal.Decimal
	locked       decimal.Decimal
	// bought and boughtValue are what the holder bought as a buyer and
	// paid before fees; average_price is their ratio.
	bought, boughtValue decimal.Decimal
	expired             bool
	updated             time.Time
}

func (p *position) touch(at time.Time) {
	if at.After(p.updated) {
		p.updated = at
	}
}

func (p *position) averagePrice() pgtype.Numeric {
	if !p.bought.IsPositive() {
		return pgtype.Numeric{}
	}
	return numeric(p.boughtValue.DivRound(p.bought, 18))
}

// positionSet holds the positions a batch reads, locks and writes.
type positionSet map[PositionKey]*position

// get returns the position of key, creating an empty one of the
// instrument's market.
func (ps positionSet) get(key PositionKey) *position {
	if p := ps[key]; p != nil {
		return p
	}
	fam, slot, _ := topics.ParseInstrumentID(key.Instrument) // keys come from parsed instruments
	p := &position{key: key, market: topics.MarketID(fam, slot), slot: int64(slot)}
	ps[key] = p
	return p
}

// loadPositions reads and locks, in key order, the positions of keys and
// every position in the markets of expiring (instrument ids), so that
// expiring them takes no lock in another order.
func loadPositions(ctx context.Context, tx pgx.Tx, keys []PositionKey, expiring []string) (positionSet, error) {
	slices.SortFunc(keys, comparePositionKeys)
	keys = slices.Compact(keys)
	accs := make([]int64, len(keys))
	insts := make([]string, len(keys))
	for i, k := range keys {
		accs[i], insts[i] = k.Account, k.Instrument
	}
	out := positionSet{}
	if len(keys) == 0 && len(expiring) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT p.account_id, p.instrument_id, p.market_id, p.slot, p.quantity, p.locked, p.bought_quantity, p.bought_value,
		       p.expired, p.update_date
		FROM positions p
		WHERE (p.account_id, p.instrument_id) IN (
		    SELECT * FROM unnest($1::bigint[], $2::text[])
		    UNION SELECT account_id, instrument_id FROM positions WHERE instrument_id = ANY($3))
		ORDER BY p.account_id, p.instrument_id FOR UPDATE OF p`, accs, insts, expiring)
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	for rows.Next() {
		p := &position{}
		if err := rows.Scan(&p.key.Account, &p.key.Instrument, &p.market, &p.slot, &p.quantity, &p.locked, &p.bought, &p.boughtValue,
			&p.expired, &p.updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read positions: %w", err)
		}
		out[p.key] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	return out, nil
}

// lockedBySells returns, for each position of keys, what the account's
// live sell orders in that market still offer: quantity minus what traded
// (by the events or the settled fills, whichever says more). It reads the
// orders as the batch wrote them.
func lockedBySells(ctx context.Context, tx pgx.Tx, keys []PositionKey) (map[PositionKey]decimal.Decimal, error) {
	out := make(map[PositionKey]decimal.Decimal, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	accs := make([]int64, len(keys))
	insts := make([]string, len(keys))
	for i, k := range keys {
		accs[i], insts[i] = k.Account, k.Instrument
	}
	rows, err := tx.Query(ctx, `
		SELECT o.account_id, o.instrument_id, sum(o.quantity - GREATEST(o.fulfilled, o.settled_quantity))
		FROM orders o JOIN unnest($1::bigint[], $2::text[]) AS k(account_id, instrument_id) USING (account_id, instrument_id)
		WHERE NOT o.side AND o.status IN (1, 13)
		GROUP BY 1, 2`, accs, insts)
	if err != nil {
		return nil, fmt.Errorf("sum live sell orders: %w", err)
	}
	var k PositionKey
	var sum decimal.Decimal
	_, err = pgx.ForEachRow(rows, []any{&k.Account, &k.Instrument, &sum}, func() error {
		out[k] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sum live sell orders: %w", err)
	}
	return out, nil
}

// writePositions sets each position's locked quantity to what its live
// sell orders hold (at most its quantity: a sell may be reported before
// the fill that gave the units arrives) and writes them all.
func writePositions(ctx context.Context, tx pgx.Tx, ps positionSet) ([]PositionKey, error) {
	keys := make([]PositionKey, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePositionKeys)
	live, err := lockedBySells(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	n := len(keys)
	if n == 0 {
		return nil, nil
	}
	accs, markets, slots := make([]int64, n), make([]int64, n), make([]int64, n)
	insts := make([]string, n)
	qs, ls, bqs, bvs, avgs := make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n), make([]pgtype.Numeric, n)
	expired := make([]bool, n)
	updated := make([]time.Time, n)
	for i, k := range keys {
		p := ps[k]
		p.locked = decimal.Min(p.quantity, live[k])
		accs[i], insts[i], markets[i], slots[i] = k.Account, k.Instrument, p.market, p.slot
		qs[i], ls[i], bqs[i], bvs[i] = numeric(p.quantity), numeric(p.locked), numeric(p.bought), numeric(p.boughtValue)
		avgs[i], expired[i], updated[i] = p.averagePrice(), p.expired, p.updated
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO positions (account_id, instrument_id, market_id, slot, quantity, locked, bought_quantity, bought_value,
		                       average_price, expired, update_date)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::numeric[], $6::numeric[],
		                     $7::numeric[], $8::numeric[], $9::numeric[], $10::bool[], $11::timestamptz[])
		ON CONFLICT (account_id, instrument_id) DO UPDATE SET
		    quantity = EXCLUDED.quantity, locked = EXCLUDED.locked, bought_quantity = EXCLUDED.bought_quantity,
		    bought_value = EXCLUDED.bought_value, average_price = EXCLUDED.average_price, expired = EXCLUDED.expired,
		    update_date = EXCLUDED.update_date`,
		accs, insts, markets, slots, qs, ls, bqs, bvs, avgs, expired, updated)
	if err != nil {
		return nil, fmt.Errorf("write positions: %w", err)
	}
	return keys, nil
}
