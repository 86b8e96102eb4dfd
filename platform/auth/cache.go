package auth

import (
	"hash/maphash"
	"sync"
	"time"
)

const cacheShards = 32

// tokenCache remembers verified tokens until they expire. It is split in
// shards, each behind its own RWMutex, so concurrent readers of different
// tokens rarely meet on a lock. Its size is bounded: a full shard first
// drops expired entries and then arbitrary ones (Go's map order is
// random), so a flood of distinct valid tokens cannot grow memory.
type tokenCache struct {
	seed     maphash.Seed
	perShard int
	shards   [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]cacheEntry
}

type cacheEntry struct {
	claims *Claims
	exp    time.Time
}

func newTokenCache(max int) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), perShard: max/cacheShards + 1}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
	}
	return c
}

func (c *tokenCache) shard(token string) *cacheShard {
	return &c.shards[maphash.String(c.seed, token)%cacheShards]
}

// get returns the claims of token if it was verified and has not expired.
func (c *tokenCache) get(token string, now time.Time) *Claims {
	s := c.shard(token)
	s.mu.RLock()
	e, ok := s.m[token]
	s.mu.RUnlock()
	if !ok || !now.Before(e.exp) {
		return nil
	}
	return e.claims
}

func (c *tokenCache) put(token string, claims *Claims, exp, now time.Time) {
	s := c.shard(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= c.perShard {
		for k, e := range s.m {
			if !now.Before(e.exp) {
				delete(s.m, k)
			}
		}
		for k := range s.m {
			if len(s.m) < c.perShard*7/8 {
				break
			}
			delete(s.m, k)
		}
	}
	s.m[token] = cacheEntry{claims: claims, exp: exp}
}

// clear forgets every token, for when a key stops being trusted.
func (c *tokenCache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.mu.Unlock()
	}
}

func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}
