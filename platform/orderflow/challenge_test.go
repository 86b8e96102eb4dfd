package orderflow

import (
	"errors"
	"os"
	"testing"
	"time"

	"blockspace.exchange/platform/postgres/pgtest"
)

// TestChallengesAreBounded: an address keeps its newest
// MaxChallengesPerAddress challenges however many are asked for, and
// DeleteExpired removes the expired ones, used or not, and no others.
func TestChallengesAreBounded(t *testing.T) {
	pool := pgtest.New(t, os.DirFS("../../settler/schema/migrations"))
	s := NewChallenges(pool)
	ctx := t.Context()
	const addr, other = "0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b2"
	now := time.Now().Truncate(time.Millisecond)
	save := func(address string, expires time.Time) string {
		t.Helper()
		c, err := NewChallenge("Test", 1, address, expires)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, c, expires); err != nil {
			t.Fatal(err)
		}
		return c.Message.Nonce
	}
	count := func(address string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM orderflow_challenges WHERE address = $1`, address).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var nonces []string
	for i := range MaxChallengesPerAddress + 3 {
		nonces = append(nonces, save(addr, now.Add(time.Minute+time.Duration(i)*time.Millisecond)))
	}
	expired := save(other, now.Add(-time.Second))
	usedExpired := save(other, now.Add(time.Second))
	if _, err := s.Use(ctx, usedExpired, other, now); err != nil {
		t.Fatal(err)
	}
	if n := count(addr); n != MaxChallengesPerAddress {
		t.Fatalf("%d challenges kept for one address, want %d", n, MaxChallengesPerAddress)
	}
	if _, err := s.Use(ctx, nonces[0], addr, now); !errors.Is(err, ErrChallenge) {
		t.Fatalf("oldest challenge beyond the bound: %v, want ErrChallenge", err)
	}
	if _, err := s.Use(ctx, nonces[len(nonces)-1], addr, now); err != nil {
		t.Fatalf("newest challenge: %v", err)
	}
	n, err := s.DeleteExpired(ctx, now.Add(2*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("DeleteExpired: %d, %v; want 2 (%s and the used %s)", n, err, expired, usedExpired)
	}
	if count(other) != 0 || count(addr) != MaxChallengesPerAddress {
		t.Fatalf("after DeleteExpired: %d of the other address, %d live", count(other), count(addr))
	}
}
