package orderflow

import (
	"errors"
	"os"
	"testing"
	"time"

	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// A revoked key stops working in a process that cached it live once the
// cache entry is TTL old, never later; one not cached stops at once. The
// clock is the Keys' own, so the bound is checked without timing anything.
func TestRevokedKeyStopsWithinTheTTL(t *testing.T) {
	// The settler module owns the schema; platform cannot import it.
	pool := pgtest.New(t, os.DirFS("../../settler/schema/migrations"))
	store := NewKeyStore(pool)
	ctx := t.Context()
	key, id, err := store.Issue(ctx, "0x00000000000000000000000000000000000000a1")
	if err != nil {
		t.Fatal(err)
	}
	if !id.Has(RoleOriginator) || !id.Has(RoleSearcher) || id.Has(RoleRefundRead) {
		t.Fatalf("roles of a new key: %v", id.Roles)
	}
	keys := NewKeys(store, time.Second)
	now := time.Unix(1_700_000_000, 0)
	keys.now = func() time.Time { return now }
	if _, err := keys.Lookup(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := store.Revoke(ctx, id.KeyHash); err != nil {
		t.Fatal(err)
	}
	now = now.Add(999 * time.Millisecond)
	if _, err := keys.Lookup(ctx, key); err != nil {
		t.Fatalf("within the TTL the cached key still answers: %v", err)
	}
	now = now.Add(time.Millisecond)
	if _, err := keys.Lookup(ctx, key); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a TTL after caching, the revoked key answered %v", err)
	}
	other := NewKeys(store, time.Second)
	if _, err := other.Lookup(ctx, key); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a process that never cached the key: %v", err)
	}
	// Rotation: a new key for the address ends the old one.
	fresh, _, err := store.Issue(ctx, "0x00000000000000000000000000000000000000a1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Lookup(ctx, fresh); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	if _, _, err := store.Issue(ctx, "0x00000000000000000000000000000000000000a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewKeys(store, time.Second).Lookup(ctx, fresh); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("a key rotated away: %v", err)
	}
}
