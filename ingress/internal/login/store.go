package login

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/users"
)

// ETH is the token every new account holds, at zero.
const ethTokenID = 1

var (
	errNonce        = errors.New("nonceHash is unknown, already used, expired or issued for another address")
	errSession      = errors.New("session is unknown, expired or revoked")
	errReused       = errors.New("refresh credential was already used; the session is revoked")
	errAgentChanged = errors.New("User-Agent differs from the one the session was created with")
)

type store struct{ pool *pgxpool.Pool }

// issueNonce stores a new challenge. On the rare collision of four random
// bytes with a live nonce it reports taken=true and the caller draws again;
// an expired nonce's slot is reused.
func (s store) issueNonce(ctx context.Context, nonce, addr, name, typedData string, ttl time.Duration) (taken bool, err error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO login_nonces (nonce_hash, address, display_name, typed_data, expires_at)
		VALUES ($1, $2, $3, $4, now() + $5::interval)
		ON CONFLICT (nonce_hash) DO UPDATE
		SET address = EXCLUDED.address, display_name = EXCLUDED.display_name, typed_data = EXCLUDED.typed_data,
		    issued_at = now(), expires_at = EXCLUDED.expires_at, used_at = NULL
		WHERE login_nonces.expires_at < now()`, nonce, addr, name, typedData, ttl.String())
	if err != nil {
		return false, fmt.Errorf("insert login nonce: %w", err)
	}
	return tag.RowsAffected() == 0, nil
}

// deleteExpiredNonces removes the nonces that expired before now.
func (s store) deleteExpiredNonces(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_nonces WHERE expires_at < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("delete expired login nonces: %w", err)
	}
	return tag.RowsAffected(), nil
}

// consumeNonce marks the nonce used, in tx, whatever the outcome of the
// signature check that follows: a nonce allows one attempt.
func consumeNonce(ctx context.Context, tx pgx.Tx, nonce, addr string) (typedData, name string, err error) {
	err = tx.QueryRow(ctx, `
		UPDATE login_nonces SET used_at = now()
		WHERE nonce_hash = $1 AND address = $2 AND used_at IS NULL AND expires_at > now()
		RETURNING typed_data, display_name`, nonce, addr).Scan(&typedData, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", errNonce
	}
	if err != nil {
		return "", "", fmt.Errorf("consume login nonce: %w", err)
	}
	return typedData, name, nil
}

// ensureUser returns the user of addr, creating it with its current and
// preconf trading accounts, each holding ETH at zero, on first login.
func ensureUser(ctx context.Context, tx pgx.Tx, addr, name string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO users (address, display_name) VALUES ($1, $2)
		ON CONFLICT (address) DO NOTHING RETURNING user_id`, addr, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := tx.QueryRow(ctx, `SELECT user_id FROM users WHERE address = $1`, addr).Scan(&id); err != nil {
			return 0, fmt.Errorf("read user: %w", err)
		}
		return id, nil
	}
	if err != nil {
		return 0, fmt.Errorf("insert user: %w", err)
	}
	_, err = tx.Exec(ctx, `
		WITH a AS (
			INSERT INTO accounts (user_id, type, name)
			VALUES ($1, $2, 'Current account'), ($1, $3, 'Preconf trading account')
			RETURNING account_id)
		INSERT INTO account_balances (account_id, token_id) SELECT account_id, $4 FROM a`,
		id, users.AccountCurrent, users.AccountPreconf, ethTokenID)
	if err != nil {
		return 0, fmt.Errorf("create accounts of user %d: %w", id, err)
	}
	return id, nil
}

// createSession starts a session and its first refresh credential.
func createSession(ctx context.Context, tx pgx.Tx, userID int64, ua, ip string, ttl time.Duration) (int64, string, error) {
	var sid int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO sessions (user_id, user_agent, client_ip, expires_at)
		VALUES ($1, $2, $3, now() + $4::interval) RETURNING session_id`, userID, ua, ip, ttl.String()).Scan(&sid); err != nil {
		return 0, "", fmt.Errorf("insert session: %w", err)
	}
	token, err := insertRefreshToken(ctx, tx, sid)
	return sid, token, err
}

func insertRefreshToken(ctx context.Context, tx pgx.Tx, sid int64) (string, error) {
	token, hash, err := newRefreshToken()
	if err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO refresh_tokens (token_hash, session_id) VALUES ($1, $2)`, hash, sid); err != nil {
		return "", fmt.Errorf("insert refresh credential: %w", err)
	}
	return token, nil
}

// rotation is the outcome of a refresh.
type rotation struct {
	userID, sessionID int64
	token             string
	left              int // whole seconds the session has left, at least 1
}

// rotate exchanges a live refresh credential for a new one. A credential
// that was already rotated revokes its whole session: either the client
// or a thief holds a newer one, and we cannot tell which.
//
// The credential row is locked with its session. Locking the session
// alone is not enough: a refresh that queued behind another one on the
// session lock would still see the credential as its snapshot had it,
// not yet rotated, and both would win. Waiting on the credential row
// makes Postgres re-read it once the first refresh commits, so the second
// sees rotated_at and is treated as reuse.
func (s store) rotate(ctx context.Context, hash []byte, ua string) (rotation, error) {
	var out rotation
	revoked := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			rotatedAt *time.Time
			agent     string
			live      bool
		)
		err := tx.QueryRow(ctx, `
			SELECT r.session_id, r.rotated_at, s.user_id, s.user_agent,
			       s.revoked_at IS NULL AND s.expires_at > now(),
			       greatest(1, ceil(extract(epoch FROM s.expires_at - now())))::int
			FROM refresh_tokens r JOIN sessions s USING (session_id)
			WHERE r.token_hash = $1
			FOR UPDATE OF r, s`, hash).Scan(&out.sessionID, &rotatedAt, &out.userID, &agent, &live, &out.left)
		if errors.Is(err, pgx.ErrNoRows) {
			return errSession
		}
		if err != nil {
			return fmt.Errorf("read refresh credential: %w", err)
		}
		if !live {
			return errSession
		}
		if rotatedAt != nil {
			revoked = true
			_, err := tx.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoke_reason = 'reuse' WHERE session_id = $1`, out.sessionID)
			return err
		}
		if agent != ua {
			return errAgentChanged
		}
		if _, err := tx.Exec(ctx, `UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = $1`, hash); err != nil {
			return fmt.Errorf("rotate refresh credential: %w", err)
		}
		out.token, err = insertRefreshToken(ctx, tx, out.sessionID)
		return err
	})
	if err != nil {
		return rotation{}, err
	}
	if revoked {
		return rotation{}, errReused
	}
	return out, nil
}

// revoke ends a session of userID; revoking an ended one is not an error.
func (s store) revoke(ctx context.Context, userID, sid int64, reason string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE sessions SET revoked_at = now(), revoke_reason = $3
		WHERE session_id = $1 AND user_id = $2 AND revoked_at IS NULL`, sid, userID, reason)
	if err != nil {
		return fmt.Errorf("revoke session %d: %w", sid, err)
	}
	return nil
}

// updateUser sets one column of a user (set is "<column> = $2") and
// notifies readers that cache users, in the same transaction.
func (s store) updateUser(ctx context.Context, userID int64, set string, value any) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET `+set+`, updated_at = now() WHERE user_id = $1`, userID, value)
		if err != nil {
			return fmt.Errorf("update user %d: %w", userID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("update user %d: %w", userID, users.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, users.ChangedChannel, strconv.FormatInt(userID, 10)); err != nil {
			return fmt.Errorf("notify user change: %w", err)
		}
		return nil
	})
}
