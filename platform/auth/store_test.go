package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrations are the exchange's schema. The settler module owns it; the
// files are read from its directory because platform cannot import it.
func migrations() fs.FS { return os.DirFS("../../settler/schema/migrations") }

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func publish(t testing.TB, pool *pgxpool.Pool, key *ecdsa.PrivateKey) string {
	t.Helper()
	kid, err := PublishKey(t.Context(), pool, &key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if kid != KeyID(&key.PublicKey) {
		t.Fatalf("PublishKey returned kid %s, want the thumbprint %s", kid, KeyID(&key.PublicKey))
	}
	return kid
}

func retire(t testing.TB, pool *pgxpool.Pool, kid, notAfter string) {
	t.Helper()
	tag, err := pool.Exec(t.Context(), `UPDATE signing_keys SET not_after = now() + $2::interval WHERE kid = $1`, kid, notAfter)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("retire %s: %v, %d rows", kid, err, tag.RowsAffected())
	}
}

func storeVerifier(t testing.TB, pool *pgxpool.Pool) *Verifier {
	t.Helper()
	v := NewVerifier(VerifierConfig{Keys: PostgresKeys(pool), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := v.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKeyRotation follows docs/api.md "Access tokens": a second ingress
// key is published beside the first, both verify, the old one is retired
// with a grace period, and once not_after has passed it verifies nothing
// and cannot be published again.
func TestKeyRotation(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	oldKey, newKey := newKey(t), newKey(t)
	oldKid := publish(t, pool, oldKey)
	newKid := publish(t, pool, newKey)
	if again := publish(t, pool, oldKey); again != oldKid {
		t.Fatalf("publishing a key twice: kid %s, then %s", oldKid, again)
	}

	ks, err := LoadKeys(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[oldKid] == nil || !ks[oldKid].Equal(&oldKey.PublicKey) || ks[newKid] == nil || !ks[newKid].Equal(&newKey.PublicKey) {
		t.Fatalf("LoadKeys after publishing two keys: %v", ks)
	}

	f := &fixture{now: time.Now()}
	oldTok := f.sign(t, jwt.SigningMethodES256, oldKey, oldKid, f.claims(f.now))
	newTok := f.sign(t, jwt.SigningMethodES256, newKey, newKid, f.claims(f.now))
	v := storeVerifier(t, pool)
	for name, tok := range map[string]string{"old": oldTok, "new": newTok} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("token of the %s key while both are live: %v", name, err)
		}
	}

	// Retired with a grace period: it still verifies, but no process may
	// start signing with it.
	retire(t, pool, oldKid, "1 hour")
	if err := v.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, oldTok); err != nil {
		t.Fatalf("token of a key within its grace period: %v", err)
	}
	if _, err := PublishKey(ctx, pool, &oldKey.PublicKey); err == nil || !strings.Contains(err.Error(), oldKid) {
		t.Fatalf("publishing a retired key: %v, want a refusal naming %s", err, oldKid)
	}

	// not_after has passed: the key is gone, and so is the token the
	// verifier had cached.
	retire(t, pool, oldKid, "-1 second")
	if ks, err = LoadKeys(ctx, pool); err != nil || len(ks) != 1 || ks[newKid] == nil {
		t.Fatalf("LoadKeys after not_after passed: %v %v, want only %s", ks, err, newKid)
	}
	if err := v.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, oldTok); !errors.Is(err, ErrInvalidToken) || !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("token of a retired key: %v, want an unknown key", err)
	}
	if _, err := v.Verify(ctx, newTok); err != nil {
		t.Fatalf("token of the new key after the old one retired: %v", err)
	}
	if _, err := PublishKey(ctx, pool, &oldKey.PublicKey); err == nil || !strings.Contains(err.Error(), "retired") {
		t.Fatalf("publishing a key past its not_after: %v", err)
	}
}

// TestLoadKeysRefusesABadRow: a row whose key does not parse fails the
// load, naming the row, instead of silently verifying with fewer keys.
func TestLoadKeysRefusesABadRow(t *testing.T) {
	pool := pgtest.New(t, migrations())
	publish(t, pool, newKey(t))
	if _, err := pool.Exec(t.Context(), `INSERT INTO signing_keys (kid, public_key) VALUES ('broken', 'not a key')`); err != nil {
		t.Fatal(err)
	}
	if ks, err := LoadKeys(t.Context(), pool); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("LoadKeys with an unreadable row: %v %v", ks, err)
	}
}

// TestRevokedSessionIsRefusedByARunningVerifier: once a session is
// revoked (logout, or a refresh credential used twice), its access token,
// valid and already cached, is refused by a running verifier from its next
// read of the revoked sessions (every RevokedRefresh), and the tokens of
// other sessions keep working; a verifier started after the revocation
// refuses it from its first reload.
func TestRevokedSessionIsRefusedByARunningVerifier(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, migrations())
	key := newKey(t)
	kid := publish(t, pool, key)
	var userID, kept, revoked int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (address) VALUES ('0x00000000000000000000000000000000000000aa') RETURNING user_id`).Scan(&userID); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []*int64{&kept, &revoked} {
		if err := pool.QueryRow(ctx, `INSERT INTO sessions (user_id, user_agent, expires_at) VALUES ($1, 'test', now() + interval '1 hour') RETURNING session_id`, userID).Scan(sid); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{now: time.Now()}
	token := func(sid int64) string {
		c := f.claims(f.now)
		c.User.UserID, c.SessionID = userID, sid
		return f.sign(t, jwt.SigningMethodES256, key, kid, c)
	}
	keptTok, revokedTok := token(kept), token(revoked)

	// reads counts the reads of the revoked sessions that have returned.
	var reads atomic.Int64
	revocations := PostgresRevocations(pool)
	v := NewVerifier(VerifierConfig{Keys: PostgresKeys(pool), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Revoked: func(ctx context.Context) (map[int64]struct{}, error) {
			defer reads.Add(1)
			return revocations(ctx)
		}})
	if err := v.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	// The keys are reloaded less often than a wait lasts, so only the
	// reading of the revoked sessions can refuse the token.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); v.Run(runCtx, 2*poll.Timeout) }()
	defer func() { stop(); <-done }()
	for _, tok := range []string{keptTok, revokedTok} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("token of a live session: %v", err)
		}
	}
	// The session is revoked after the read Run makes as it starts, so
	// only a read Run makes later can refuse the token.
	poll.Until(t, "the running verifier's first read of the revoked sessions", func() bool { return reads.Load() > 0 })

	if _, err := pool.Exec(ctx, `UPDATE sessions SET revoked_at = now(), revoke_reason = 'logout' WHERE session_id = $1`, revoked); err != nil {
		t.Fatal(err)
	}
	var last error
	poll.Before(t, "the running verifier to refuse the token of the revoked session", time.Now().Add(poll.Timeout), func() bool {
		_, last = v.Verify(ctx, revokedTok)
		return errors.Is(last, ErrRevoked) && errors.Is(last, ErrInvalidToken)
	}, func() string { return fmt.Sprintf("Verify: %v", last) })
	if _, err := v.Verify(ctx, keptTok); err != nil {
		t.Fatalf("token of another session after a revocation: %v", err)
	}

	fresh := NewVerifier(VerifierConfig{Keys: PostgresKeys(pool), Revoked: PostgresRevocations(pool), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := fresh.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ReloadRevoked(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Verify(ctx, revokedTok); !errors.Is(err, ErrRevoked) {
		t.Fatalf("a fresh verifier accepts the token of a revoked session: %v", err)
	}
}
