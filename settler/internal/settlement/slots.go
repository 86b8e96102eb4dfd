package settlement

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"blockspace.exchange/platform/market"
	"blockspace.exchange/topics"
)

// slot is a trading_slots row as the batch changes it (migration 0008).
type slot struct {
	n                         int64
	sellerUser, sellerAccount int64 // 0 until a market.open names them
	totalPreconf              int64
	phase                     int
	// openedAt and closedAt are the times of the slot's first
	// market.status and of the one that closed trading; zero until seen.
	openedAt, closedAt         time.Time
	issued                     bool
	dirty, issuedNow, expiring bool
}

// expired reports whether positions of the slot are expired: its trading
// closed.
func (s *slot) expired() bool { return s.phase >= topics.MarketStatusTradingClosed }

// open takes the seller and preconf supply of the slot's first market.open
// that opens a market (market.New, the rule the matcher opens it by) and
// names a seller owning the account.
func (s *slot) open(o *topics.MarketOpen, owner func(account, user int64) bool) bool {
	if s.sellerAccount != 0 {
		return false
	}
	p, err := market.New(*o)
	if err != nil || !owner(p.SellerAccountID, p.SellerUserID) {
		return false
	}
	s.sellerUser, s.sellerAccount, s.totalPreconf, s.dirty = p.SellerUserID, p.SellerAccountID, p.TotalPreconf, true
	s.issue()
	return true
}

// status records a market.status: the matcher opened a market of the slot
// (which issued the slot) and the slot reached status.
func (s *slot) status(status int, at time.Time) {
	if s.openedAt.IsZero() {
		s.openedAt, s.dirty = at, true
	}
	if status > s.phase {
		if status >= topics.MarketStatusTradingClosed && !s.expired() {
			s.expiring, s.closedAt = true, at
		}
		s.phase, s.dirty = status, true
	}
	s.issue()
}

// issue marks the slot issued once both its seller and the matcher's
// first status are known.
func (s *slot) issue() {
	if !s.issued && !s.openedAt.IsZero() && s.sellerAccount != 0 {
		s.issued, s.issuedNow, s.dirty = true, true, true
	}
}

// instruments are the slot's two markets.
func (s *slot) instruments() [2]string {
	return [2]string{topics.InstrumentID(topics.WholeBlock, uint64(s.n)), topics.InstrumentID(topics.InclusionPreconf, uint64(s.n))}
}

// loadSlots creates the missing rows of slots and locks them all in slot
// order. Every batch that reads a slot's issue locks its row, so a fill
// parked by one transaction is always seen by the one that issues the
// slot.
func loadSlots(ctx context.Context, tx pgx.Tx, slots []int64) (map[int64]*slot, error) {
	out := make(map[int64]*slot, len(slots))
	if len(slots) == 0 {
		return out, nil
	}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	if _, err := tx.Exec(ctx, `INSERT INTO trading_slots (slot) SELECT unnest($1::bigint[]) ORDER BY 1 ON CONFLICT DO NOTHING`, slots); err != nil {
		return nil, fmt.Errorf("create trading slots: %w", err)
	}
	rows, err := tx.Query(ctx, `
		SELECT slot, coalesce(seller_user_id, 0), coalesce(seller_account_id, 0), coalesce(total_preconf, 0), phase,
		       opened_at, closed_at, issued
		FROM trading_slots WHERE slot = ANY($1) ORDER BY slot FOR UPDATE`, slots)
	if err != nil {
		return nil, fmt.Errorf("read trading slots: %w", err)
	}
	var s slot
	var opened, closed *time.Time
	_, err = pgx.ForEachRow(rows, []any{&s.n, &s.sellerUser, &s.sellerAccount, &s.totalPreconf, &s.phase, &opened, &closed, &s.issued}, func() error {
		row := s
		if opened != nil {
			row.openedAt = *opened
		}
		if closed != nil {
			row.closedAt = *closed
		}
		out[s.n] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read trading slots: %w", err)
	}
	return out, nil
}

func writeSlots(ctx context.Context, tx pgx.Tx, slots map[int64]*slot) error {
	var ns, users, accounts, totals []int64
	var phases []int32
	var opened, closed []*time.Time
	var issued []bool
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	for _, s := range slots {
		if !s.dirty {
			continue
		}
		ns, users, accounts, totals = append(ns, s.n), append(users, s.sellerUser), append(accounts, s.sellerAccount), append(totals, s.totalPreconf)
		phases, opened, closed, issued = append(phases, int32(s.phase)), append(opened, at(s.openedAt)), append(closed, at(s.closedAt)), append(issued, s.issued)
	}
	if len(ns) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		UPDATE trading_slots t SET seller_user_id = NULLIF(v.seller_user_id, 0), seller_account_id = NULLIF(v.seller_account_id, 0),
		       total_preconf = CASE WHEN v.seller_account_id = 0 THEN NULL ELSE v.total_preconf END,
		       phase = v.phase, opened_at = v.opened_at, closed_at = v.closed_at, issued = v.issued
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::smallint[], $6::timestamptz[], $7::timestamptz[], $8::bool[])
		     AS v(slot, seller_user_id, seller_account_id, total_preconf, phase, opened_at, closed_at, issued)
		WHERE t.slot = v.slot`, ns, users, accounts, totals, phases, opened, closed, issued)
	if err != nil {
		return fmt.Errorf("write trading slots: %w", err)
	}
	return nil
}

// park keeps fills of slots that are not issued yet.
func park(ctx context.Context, tx pgx.Tx, fills []*Record) error {
	if len(fills) == 0 {
		return nil
	}
	ids, slots := make([]int64, len(fills)), make([]int64, len(fills))
	values := make([][]byte, len(fills))
	for i, r := range fills {
		ids[i], slots[i], values[i] = r.Fill.TradeID, int64(r.Fill.Slot), r.Value
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO parked_fills (trade_id, slot, value) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[])
		ORDER BY 1 ON CONFLICT DO NOTHING`, ids, slots, values)
	if err != nil {
		return fmt.Errorf("park fills: %w", err)
	}
	return nil
}

// unpark takes the parked fills of slots out of parked_fills, decoded.
func unpark(ctx context.Context, tx pgx.Tx, slots []int64) ([]*Record, error) {
	if len(slots) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `DELETE FROM parked_fills WHERE slot = ANY($1) RETURNING value`, slots)
	if err != nil {
		return nil, fmt.Errorf("unpark fills: %w", err)
	}
	values, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("unpark fills: %w", err)
	}
	out := make([]*Record, 0, len(values))
	for _, v := range values {
		e, err := topics.Decode(v)
		if err != nil {
			return nil, fmt.Errorf("unpark fills: %w", err) // it decoded when it was parked
		}
		r := Decode(topics.Fills, e, v)
		out = append(out, &r)
	}
	return out, nil
}
