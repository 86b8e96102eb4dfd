package auth

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PublishKey records pub in signing_keys so that every verifier accepts
// tokens signed with its private key, and returns its kid. A key that an
// operator has retired (not_after set) is refused: a process must not
// sign tokens that verifiers are about to reject.
func PublishKey(ctx context.Context, pool *pgxpool.Pool, pub *ecdsa.PublicKey) (string, error) {
	kid := KeyID(pub)
	pemText, err := EncodePublicKey(pub)
	if err != nil {
		return "", err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO signing_keys (kid, public_key) VALUES ($1, $2) ON CONFLICT (kid) DO NOTHING`, kid, pemText); err != nil {
		return "", fmt.Errorf("publish signing key: %w", err)
	}
	var notAfter *time.Time
	if err := pool.QueryRow(ctx, `SELECT not_after FROM signing_keys WHERE kid = $1`, kid).Scan(&notAfter); err != nil {
		return "", fmt.Errorf("publish signing key: %w", err)
	}
	if notAfter != nil {
		return "", fmt.Errorf("signing key %s was retired (not_after %s); configure a new key", kid, notAfter.Format(time.RFC3339))
	}
	return kid, nil
}

// LoadKeys reads the keys that verify tokens now: those without not_after
// or whose not_after is still ahead.
func LoadKeys(ctx context.Context, pool *pgxpool.Pool) (KeySet, error) {
	rows, err := pool.Query(ctx, `SELECT kid, public_key FROM signing_keys WHERE not_after IS NULL OR not_after > now()`)
	if err != nil {
		return nil, fmt.Errorf("load signing keys: %w", err)
	}
	defer rows.Close()
	ks := KeySet{}
	for rows.Next() {
		var kid, pemText string
		if err := rows.Scan(&kid, &pemText); err != nil {
			return nil, fmt.Errorf("load signing keys: %w", err)
		}
		pub, err := ParsePublicKey([]byte(pemText))
		if err != nil {
			return nil, fmt.Errorf("signing key %s: %w", kid, err)
		}
		ks[kid] = pub
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load signing keys: %w", err)
	}
	return ks, nil
}

// PostgresKeys is a KeySource reading signing_keys through pool.
func PostgresKeys(pool *pgxpool.Pool) KeySource {
	return func(ctx context.Context) (KeySet, error) { return LoadKeys(ctx, pool) }
}
