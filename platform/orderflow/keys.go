package orderflow

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Roles of an orderflow account (GET /v1/auth/account).
const (
	RoleOriginator = "originator" // partner originator: may use /v1/<API_KEY> on the originator endpoint
	RoleSearcher   = "searcher"   // may stream and send bundles
	RoleRefundRead = "refund-read"
)

// KeyPrefix starts every API key, so a leaked key is recognizable in logs
// and by secret scanners.
const KeyPrefix = "ofk_"

// ErrUnknownKey is an API key that does not exist or is revoked.
var ErrUnknownKey = errors.New("unknown or revoked API key")

// Identity is what an API key stands for.
type Identity struct {
	Address string   // the account (lower-case 0x hex)
	KeyHash string   // hex SHA-256 of the key: identifies it without revealing it
	Roles   []string // RoleOriginator and RoleSearcher, and RoleRefundRead when Partners is not empty
	// Partners are the originators whose refunds the account agreed to
	// read, besides its own.
	Partners []string
	IssuedAt time.Time
}

// Has reports whether the identity holds role.
func (id Identity) Has(role string) bool {
	for _, r := range id.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// NewKey returns a fresh key: the prefix and 32 random bytes in hex.
func NewKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new api key: %w", err)
	}
	return KeyPrefix + hex.EncodeToString(b[:]), nil
}

// HashKey is the stored form of a key. The key carries 256 random bits, so
// a plain SHA-256 cannot be reversed; it needs no salt or stretching.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// WellFormedKey rejects strings that cannot be a key before any lookup.
func WellFormedKey(key string) bool {
	if len(key) != len(KeyPrefix)+64 || !strings.HasPrefix(key, KeyPrefix) {
		return false
	}
	_, err := hex.DecodeString(key[len(KeyPrefix):])
	return err == nil
}

// KeyStore keeps API keys in Postgres (table orderflow_api_keys), hashed.
type KeyStore struct {
	pool *pgxpool.Pool
}

// NewKeyStore returns the store on pool.
func NewKeyStore(pool *pgxpool.Pool) *KeyStore { return &KeyStore{pool: pool} }

// Issue creates a key for address and revokes any key it had: one live
// key per account, so verify both issues and rotates.
func (s *KeyStore) Issue(ctx context.Context, address string) (string, Identity, error) {
	key, err := NewKey()
	if err != nil {
		return "", Identity{}, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orderflow_accounts (address) VALUES ($1) ON CONFLICT DO NOTHING`, address); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE orderflow_api_keys SET revoked_at = now() WHERE address = $1 AND revoked_at IS NULL`, address); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO orderflow_api_keys (key_hash, address) VALUES ($1, $2)`, HashKey(key), address)
		return err
	})
	if err != nil {
		return "", Identity{}, fmt.Errorf("issue api key: %w", err)
	}
	id, err := s.Lookup(ctx, key)
	return key, id, err
}

// Lookup returns the identity of a live key, or ErrUnknownKey.
func (s *KeyStore) Lookup(ctx context.Context, key string) (Identity, error) {
	if !WellFormedKey(key) {
		return Identity{}, ErrUnknownKey
	}
	h := HashKey(key)
	var id Identity
	err := s.pool.QueryRow(ctx, `
		SELECT k.address, k.created_at,
		       COALESCE((SELECT array_agg(r.partner ORDER BY r.partner) FROM orderflow_refund_readers r WHERE r.reader = k.address AND r.accepted_at IS NOT NULL), '{}')
		FROM orderflow_api_keys k WHERE k.key_hash = $1 AND k.revoked_at IS NULL`, h).
		Scan(&id.Address, &id.IssuedAt, &id.Partners)
	if errors.Is(err, pgx.ErrNoRows) {
		return Identity{}, ErrUnknownKey
	}
	if err != nil {
		return Identity{}, fmt.Errorf("look up api key: %w", err)
	}
	id.KeyHash = hex.EncodeToString(h)
	id.Roles = rolesOf(id.Partners)
	return id, nil
}

// rolesOf is the roles of an account that reads the refunds of partners.
// Every account originates and searches; reading for partners only adds
// refund-read, so no one can take an account's roles by naming it.
func rolesOf(partners []string) []string {
	if len(partners) > 0 {
		return []string{RoleOriginator, RoleSearcher, RoleRefundRead}
	}
	return []string{RoleOriginator, RoleSearcher}
}

// Revoke ends the key with the given hash (hex); revoking twice is a no-op.
func (s *KeyStore) Revoke(ctx context.Context, keyHash string) error {
	h, err := hex.DecodeString(keyHash)
	if err != nil {
		return fmt.Errorf("revoke api key: bad hash: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE orderflow_api_keys SET revoked_at = now() WHERE key_hash = $1 AND revoked_at IS NULL`, h); err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	return nil
}

// Live returns which of the given key hashes (hex) are still live, for
// servers that hold connections open on a key.
func (s *KeyStore) Live(ctx context.Context, keyHashes []string) (map[string]bool, error) {
	raw := make([][]byte, 0, len(keyHashes))
	for _, h := range keyHashes {
		b, err := hex.DecodeString(h)
		if err == nil {
			raw = append(raw, b)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT key_hash FROM orderflow_api_keys WHERE key_hash = ANY($1) AND revoked_at IS NULL`, raw)
	if err != nil {
		return nil, fmt.Errorf("live api keys: %w", err)
	}
	live, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var b []byte
		err := r.Scan(&b)
		return hex.EncodeToString(b), err
	})
	if err != nil {
		return nil, fmt.Errorf("live api keys: %w", err)
	}
	out := make(map[string]bool, len(live))
	for _, h := range live {
		out[h] = true
	}
	return out, nil
}

// AddRefundReader offers reader the reading of partner's refunds; the
// offer counts once the reader accepts it (AcceptRefundReader).
func (s *KeyStore) AddRefundReader(ctx context.Context, partner, reader string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orderflow_accounts (address) VALUES ($1) ON CONFLICT DO NOTHING`, reader); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO orderflow_refund_readers (partner, reader) VALUES ($1, $2) ON CONFLICT DO NOTHING`, partner, reader)
		return err
	})
	if err != nil {
		return fmt.Errorf("add refund reader: %w", err)
	}
	return nil
}

// AcceptRefundReader is reader agreeing to read partner's refunds; it
// says whether partner had offered it. Accepting twice is a no-op.
func (s *KeyStore) AcceptRefundReader(ctx context.Context, partner, reader string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE orderflow_refund_readers SET accepted_at = COALESCE(accepted_at, now()) WHERE partner = $1 AND reader = $2`, partner, reader)
	if err != nil {
		return false, fmt.Errorf("accept refund reader: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// RemoveRefundReader ends reader's reading of partner's refunds, or the
// offer of it, and says whether there was one. Either side may remove it.
func (s *KeyStore) RemoveRefundReader(ctx context.Context, partner, reader string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM orderflow_refund_readers WHERE partner = $1 AND reader = $2`, partner, reader)
	if err != nil {
		return false, fmt.Errorf("remove refund reader: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Keys looks keys up through a short cache. A revoked key keeps working
// for at most TTL in a process that saw it live, which is how "stops
// working everywhere within a second" is met without a query per request.
type Keys struct {
	store *KeyStore
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex // guards cache
	cache map[string]cachedKey
}

type cachedKey struct {
	id      Identity
	fetched time.Time
}

// DefaultKeyTTL is how long a looked-up key is trusted without asking
// Postgres again.
const DefaultKeyTTL = 500 * time.Millisecond

// NewKeys returns a cached lookup over store; ttl <= 0 means DefaultKeyTTL.
func NewKeys(store *KeyStore, ttl time.Duration) *Keys {
	if ttl <= 0 {
		ttl = DefaultKeyTTL
	}
	return &Keys{store: store, ttl: ttl, now: time.Now, cache: make(map[string]cachedKey)}
}

// Store returns the underlying store.
func (k *Keys) Store() *KeyStore { return k.store }

// Lookup returns the identity of a live key. Unknown keys are not cached,
// so a key works the moment it is issued.
func (k *Keys) Lookup(ctx context.Context, key string) (Identity, error) {
	if !WellFormedKey(key) {
		return Identity{}, ErrUnknownKey
	}
	now := k.now()
	k.mu.Lock()
	c, ok := k.cache[key]
	k.mu.Unlock()
	if ok && now.Sub(c.fetched) < k.ttl {
		return c.id, nil
	}
	id, err := k.store.Lookup(ctx, key)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		delete(k.cache, key)
		return Identity{}, err
	}
	if len(k.cache) > 100_000 {
		clear(k.cache) // bound memory; entries are cheap to fetch again
	}
	k.cache[key] = cachedKey{id: id, fetched: now}
	return id, nil
}

// Forget drops a key from the cache (after this process revoked it).
func (k *Keys) Forget(key string) {
	k.mu.Lock()
	delete(k.cache, key)
	k.mu.Unlock()
}

// ForgetAddress drops the cached keys of an account whose roles this
// process just changed; other processes see the change within the TTL.
func (k *Keys) ForgetAddress(address string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, c := range k.cache {
		if c.id.Address == address {
			delete(k.cache, key)
		}
	}
}
