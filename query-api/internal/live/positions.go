package live

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/topics"
)

// PositionReader reads a user's positions for the positions query.
type PositionReader interface {
	Positions(ctx context.Context, userID int64, f topics.Family, instrumentID string) ([]Position, error)
}

// Position is one position of the caller (interface.md
// "WholeBlockPosition" with the account and instrument it belongs to).
type Position struct {
	AccountID    int64   `json:"accountId"`
	InstrumentID string  `json:"instrumentId"`
	MarketID     int64   `json:"marketId"`
	Slot         uint64  `json:"slot"`
	Quantity     string  `json:"quantity"`
	Available    string  `json:"available"`
	Locked       string  `json:"locked"`
	Expired      bool    `json:"expired"`
	AveragePrice *string `json:"averagePrice"`
	UpdateDate   int64   `json:"updateDate"`
}

// PostgresPositions reads the settler's positions table: the record of
// what every account holds, written exactly once per settled event.
type PostgresPositions struct{ Pool *pgxpool.Pool }

// maxPositions bounds one answer; a user holds few live positions.
const maxPositions = 500

// Positions returns the user's positions in the family (both when f is
// ""), or in one instrument, newest market (latest slot) first and, in a
// slot, whole block before inclusion preconf.
func (p PostgresPositions) Positions(ctx context.Context, userID int64, f topics.Family, instrumentID string) ([]Position, error) {
	lo, hi := int64(0), int64(3_000_000_000_000)
	if f != "" {
		lo = topics.MarketID(f, 0)
		hi = lo + 1_000_000_000_000
	}
	rows, err := p.Pool.Query(ctx, `
		SELECT p.account_id, p.instrument_id, p.market_id, p.slot, p.quantity::text,
		       (p.quantity - p.locked)::text, p.locked::text, p.expired, p.average_price::text,
		       (extract(epoch FROM p.update_date) * 1000)::bigint
		FROM positions p JOIN accounts a ON a.account_id = p.account_id
		WHERE a.user_id = $1 AND p.market_id >= $2 AND p.market_id < $3
		  AND ($4 = '' OR p.instrument_id = $4)
		ORDER BY p.slot DESC, p.market_id DESC, p.account_id
		LIMIT $5`, userID, lo, hi, instrumentID, maxPositions)
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	defer rows.Close()
	out := []Position{}
	for rows.Next() {
		var ps Position
		if err := rows.Scan(&ps.AccountID, &ps.InstrumentID, &ps.MarketID, &ps.Slot, &ps.Quantity, &ps.Available,
			&ps.Locked, &ps.Expired, &ps.AveragePrice, &ps.UpdateDate); err != nil {
			return nil, fmt.Errorf("read positions: %w", err)
		}
		out = append(out, ps)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	return out, nil
}
