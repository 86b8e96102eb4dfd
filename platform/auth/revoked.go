package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/serve"
)

// RevocationSource loads the ids of the login sessions whose access
// tokens must no longer be accepted.
type RevocationSource func(ctx context.Context) (map[int64]struct{}, error)

// revokedWindow bounds how far back revocations are read: an access token
// lives at most AUTH_ACCESS_TTL's ceiling of 24 h plus the verifier's
// leeway, and a revoked session issues no new ones, so a session revoked
// longer ago has no token left that could pass.
const revokedWindow = 25 * time.Hour

// PostgresRevocations is a RevocationSource reading the sessions table
// that ingress revokes on logout and on refresh-credential reuse. It reads
// only revocations recent enough to matter (revokedWindow), through the
// partial index sessions_revoked_at.
func PostgresRevocations(pool *pgxpool.Pool) RevocationSource {
	return func(ctx context.Context) (map[int64]struct{}, error) {
		rows, err := pool.Query(ctx, `SELECT session_id FROM sessions WHERE revoked_at IS NOT NULL AND revoked_at > now() - $1::interval`,
			fmt.Sprintf("%d seconds", int(revokedWindow/time.Second)))
		if err != nil {
			return nil, fmt.Errorf("load revoked sessions: %w", err)
		}
		defer rows.Close()
		ids := map[int64]struct{}{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return nil, fmt.Errorf("load revoked sessions: %w", err)
			}
			ids[id] = struct{}{}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("load revoked sessions: %w", err)
		}
		return ids, nil
	}
}

// ReloadRevoked replaces the set of revoked sessions. Without a
// RevocationSource it does nothing.
func (v *Verifier) ReloadRevoked(ctx context.Context) error {
	if v.cfg.Revoked == nil {
		return nil
	}
	ids, err := v.cfg.Revoked(ctx)
	if err != nil {
		return err
	}
	v.revoked.Store(&ids)
	return nil
}

// runRevocations reloads the revoked sessions every RevokedRefresh until
// ctx ends, starting at once so that a fresh process refuses them too.
func (v *Verifier) runRevocations(ctx context.Context) {
	if v.cfg.Revoked == nil {
		return
	}
	warn := func(err error) { v.cfg.Logger.Warn("reload revoked sessions", "error", err) }
	if err := v.ReloadRevoked(ctx); err != nil && ctx.Err() == nil {
		warn(err)
	}
	serve.Every(ctx, v.cfg.RevokedRefresh, v.ReloadRevoked, warn)
}

// isRevoked tells whether the session of claims was revoked. Tokens
// without a session id (none are issued today) are not checked.
func (v *Verifier) isRevoked(c *Claims) bool {
	if c.SessionID <= 0 {
		return false
	}
	_, ok := (*v.revoked.Load())[c.SessionID]
	return ok
}
