package flow

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Seen remembers the hashes accepted in the last Window, so the same
// transaction or bundle sent twice is published once. It is sharded so
// that concurrent submissions rarely share a lock. Across ingress
// instances the relay drops the rare duplicate by hash.
//
// A repeat is acknowledged only once the first submission's publish was:
// a repeat that arrives while the first is still being published waits
// for it, and publishes itself if the first failed.
type Seen struct {
	window time.Duration
	now    func() time.Time
	seed   maphash.Seed
	shards [64]seenShard
}

type seenShard struct {
	mu       sync.Mutex // guards the maps
	cur, old map[string]*claim
	rotated  time.Time
}

// claim is one submission's publish: done is closed when it ended, ok
// tells whether it succeeded.
type claim struct {
	done chan struct{}
	ok   bool
}

// NewSeen returns a set that forgets hashes after about window.
func NewSeen(window time.Duration) *Seen {
	s := &Seen{window: window, now: time.Now, seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].cur = make(map[string]*claim)
		s.shards[i].old = make(map[string]*claim)
	}
	return s
}

func (s *Seen) shard(hash string) *seenShard {
	return &s.shards[maphash.String(s.seed, hash)%uint64(len(s.shards))]
}

// Submit publishes hash once: the first caller runs publish; a caller
// that finds hash accepted returns repeat true, and one that finds it
// being published waits for that outcome (or ctx) and, if it failed,
// tries itself. An error is publish's or ctx's; then nothing was
// accepted.
func (s *Seen) Submit(ctx context.Context, hash string, publish func() error) (repeat bool, err error) {
	for {
		c, first := s.claim(hash)
		if first {
			err := publish()
			s.finish(hash, c, err == nil)
			return false, err
		}
		select {
		case <-c.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if c.ok {
			return true, nil
		}
	}
}

// claim returns the claim of hash and whether the caller made it.
func (s *Seen) claim(hash string) (*claim, bool) {
	sh := s.shard(hash)
	now := s.now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.rotated) > s.window/2 {
		// Two generations: entries live between window/2 and window.
		sh.old, sh.cur, sh.rotated = sh.cur, make(map[string]*claim), now
	}
	if c, ok := sh.cur[hash]; ok {
		return c, false
	}
	if c, ok := sh.old[hash]; ok {
		return c, false
	}
	c := &claim{done: make(chan struct{})}
	sh.cur[hash] = c
	return c, true
}

// finish ends a claim; a failed one is forgotten, so a retry publishes.
func (s *Seen) finish(hash string, c *claim, ok bool) {
	sh := s.shard(hash)
	sh.mu.Lock()
	c.ok = ok
	if !ok {
		if sh.cur[hash] == c {
			delete(sh.cur, hash)
		}
		if sh.old[hash] == c {
			delete(sh.old, hash)
		}
	}
	sh.mu.Unlock()
	close(c.done)
}
