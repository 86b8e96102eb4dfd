package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/serve"
)

// KeySource loads the current verification keys.
type KeySource func(ctx context.Context) (KeySet, error)

// VerifierConfig configures a Verifier; zero values take the defaults.
type VerifierConfig struct {
	Keys      KeySource     // required
	Logger    *slog.Logger  // required
	CacheSize int           // verified tokens remembered; default 100000
	Leeway    time.Duration // clock skew allowed on iat and exp; default 30s
	// MinReload spaces reloads caused by an unknown kid, so a stream of
	// forged kids cannot turn into a stream of database queries; default 1s.
	MinReload time.Duration
	Now       func() time.Time // default time.Now; tests move the clock
	// Revoked lists the login sessions that were revoked (logout, reuse of
	// a refresh credential); their tokens are refused although their
	// signature and exp are fine. Nil checks no sessions.
	Revoked RevocationSource
	// RevokedRefresh is how often Revoked is read while Run runs, so a
	// revocation takes effect within it without a query per request;
	// default 500ms.
	RevokedRefresh time.Duration
}

// Verifier checks access tokens.
type Verifier struct {
	cfg  VerifierConfig
	keys atomic.Pointer[KeySet]
	// revoked is the set of revoked session ids, replaced whole by each
	// reload and read without a lock on every request.
	revoked atomic.Pointer[map[int64]struct{}]
	cache   *tokenCache
	parser  *jwt.Parser

	reloadMu sync.Mutex // serialises reloads; lastMiss is read under it
	lastMiss time.Time  // last reload caused by an unknown kid
}

// Errors a caller may branch on; every verification failure wraps
// ErrInvalidToken.
var (
	ErrInvalidToken = errors.New("invalid access token")
	ErrUnknownKey   = errors.New("unknown signing key")
	ErrRevoked      = errors.New("the login session was revoked")
)

// NewVerifier returns a verifier with no keys; call Reload before use.
func NewVerifier(cfg VerifierConfig) *Verifier {
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 100_000
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.MinReload <= 0 {
		cfg.MinReload = time.Second
	}
	if cfg.RevokedRefresh <= 0 {
		cfg.RevokedRefresh = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg, cache: newTokenCache(cfg.CacheSize)}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	empty := KeySet{}
	v.keys.Store(&empty)
	none := map[int64]struct{}{}
	v.revoked.Store(&none)
	return v
}

// Keys returns the keys in use.
func (v *Verifier) Keys() KeySet { return *v.keys.Load() }

// Reload replaces the key set. When a key disappears the cache is
// cleared, so tokens signed with a withdrawn key stop working at once.
func (v *Verifier) Reload(ctx context.Context) error {
	v.reloadMu.Lock()
	defer v.reloadMu.Unlock()
	return v.reloadLocked(ctx)
}

func (v *Verifier) reloadLocked(ctx context.Context) error {
	ks, err := v.cfg.Keys(ctx)
	if err != nil {
		return err
	}
	old := v.keys.Swap(&ks)
	for kid := range *old {
		if _, ok := ks[kid]; !ok {
			v.cache.clear()
			break
		}
	}
	return nil
}

// Run reloads the keys every interval, and the revoked sessions every
// RevokedRefresh, until ctx ends, so keys published or retired and
// sessions revoked by other processes are picked up.
func (v *Verifier) Run(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	wg.Go(func() { v.runRevocations(ctx) })
	serve.Every(ctx, interval, v.Reload, func(err error) { v.cfg.Logger.Warn("reload signing keys", "error", err) })
	wg.Wait()
}

// Verify returns the claims of a valid access token. A token verified
// before is answered from the cache until its exp; the session of every
// token, cached or not, is checked against the revoked ones.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	c, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if v.isRevoked(c) {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, ErrRevoked)
	}
	return c, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (*Claims, error) {
	now := v.cfg.Now()
	if c := v.cache.get(token, now); c != nil {
		return c, nil
	}
	claims := &Claims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) { return v.key(ctx, t) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	// Cache no longer than exp, even where the leeway would accept more.
	v.cache.put(token, claims, claims.ExpiresAt.Time, now)
	return claims, nil
}

// key finds the verification key named by the token's kid, reloading the
// key set once when the kid is unknown (a key published after the last
// reload), at most once per MinReload.
func (v *Verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	if typ, ok := t.Header["typ"]; ok && typ != "JWT" {
		return nil, fmt.Errorf("header typ %v, want JWT", typ)
	}
	kid, ok := t.Header["kid"].(string)
	if !ok || kid == "" {
		return nil, errors.New("header has no kid")
	}
	if k, ok := v.Keys()[kid]; ok {
		return k, nil
	}
	v.reloadMu.Lock()
	if now := v.cfg.Now(); now.Sub(v.lastMiss) >= v.cfg.MinReload {
		v.lastMiss = now
		if err := v.reloadLocked(ctx); err != nil {
			v.cfg.Logger.Warn("reload signing keys for an unknown kid", "error", err)
		}
	}
	v.reloadMu.Unlock()
	if k, ok := v.Keys()[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
}
