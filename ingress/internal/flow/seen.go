package flow

import (
	"hash/maphash"
	"sync"
	"time"
)

// Seen remembers the hashes accepted in the last Window, so the same
// transaction or bundle sent twice is published once. It is sharded so
// that concurrent submissions rarely share a lock. Across ingress
// instances the relay drops the rare duplicate by hash.
type Seen struct {
	window time.Duration
	now    func() time.Time
	seed   maphash.Seed
	shards [64]seenShard
}

type seenShard struct {
	mu       sync.Mutex // guards the maps
	cur, old map[string]time.Time
	rotated  time.Time
}

// NewSeen returns a set that forgets hashes after about window.
func NewSeen(window time.Duration) *Seen {
	s := &Seen{window: window, now: time.Now, seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].cur = make(map[string]time.Time)
		s.shards[i].old = make(map[string]time.Time)
	}
	return s
}

// Claim records hash and reports whether it was new.
func (s *Seen) Claim(hash string) bool {
	sh := &s.shards[maphash.String(s.seed, hash)%uint64(len(s.shards))]
	now := s.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.rotated) > s.window/2 {
		// Two generations: entries live between window/2 and window.
		sh.old, sh.cur, sh.rotated = sh.cur, make(map[string]time.Time), now
	}
	if _, ok := sh.cur[hash]; ok {
		return false
	}
	if _, ok := sh.old[hash]; ok {
		return false
	}
	sh.cur[hash] = now
	return true
}

// Release forgets hash after a failed publish, so a retry is accepted.
func (s *Seen) Release(hash string) {
	sh := &s.shards[maphash.String(s.seed, hash)%uint64(len(s.shards))]
	sh.mu.Lock()
	delete(sh.cur, hash)
	delete(sh.old, hash)
	sh.mu.Unlock()
}
