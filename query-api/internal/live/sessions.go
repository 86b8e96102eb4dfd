package live

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresSessions reads revocations from the sessions table that ingress
// writes at logout and on refresh-credential reuse.
type PostgresSessions struct{ Pool *pgxpool.Pool }

// Revoked returns which of the sessions are revoked.
func (p PostgresSessions) Revoked(ctx context.Context, sessionIDs []int64) (map[int64]bool, error) {
	rows, err := p.Pool.Query(ctx, `SELECT session_id FROM sessions WHERE session_id = ANY($1) AND revoked_at IS NOT NULL`, sessionIDs)
	if err != nil {
		return nil, fmt.Errorf("read revoked sessions: %w", err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read revoked sessions: %w", err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read revoked sessions: %w", err)
	}
	return out, nil
}
