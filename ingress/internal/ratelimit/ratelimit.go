// Package ratelimit keeps token buckets per key (a client IP, an address)
// in the memory of one process.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Rate is a token bucket: Burst attempts at once, refilled at PerMinute.
// PerMinute <= 0 disables the limit.
type Rate struct {
	PerMinute float64
	Burst     float64
}

// Limiter keeps one token bucket per key in the memory of this process:
// with N replicas a client gets up to N times the rate, which still bounds
// the work and the rows a client can cause. The map is bounded: when
// full, buckets that have refilled completely (clients that are not
// limited right now) are dropped first.
type Limiter struct {
	rate Rate
	max  int
	now  func() time.Time

	mu sync.Mutex // guards m and every bucket in it
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns a limiter of rate keeping at most max buckets; now is the
// clock (time.Now).
func New(r Rate, max int, now func() time.Time) *Limiter {
	return &Limiter{rate: r, max: max, now: now, m: make(map[string]*bucket)}
}

// Allow takes one token for key, or tells how long until one is there.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	return l.take(key, true)
}

// Has tells whether key has a token, as Allow would, without taking it
// and without keeping a bucket for a key that has none yet.
func (l *Limiter) Has(key string) (bool, time.Duration) {
	return l.take(key, false)
}

func (l *Limiter) take(key string, spend bool) (bool, time.Duration) {
	if l.rate.PerMinute <= 0 {
		return true, 0
	}
	now := l.now()
	perSec := l.rate.PerMinute / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok {
		if !spend {
			return true, 0
		}
		if len(l.m) >= l.max {
			l.sweep(now, perSec)
		}
		b = &bucket{tokens: l.rate.Burst, at: now}
		l.m[key] = b
	}
	b.tokens = math.Min(l.rate.Burst, b.tokens+now.Sub(b.at).Seconds()*perSec)
	b.at = now
	if b.tokens >= 1 {
		if spend {
			b.tokens--
		}
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / perSec * float64(time.Second))
}

func (l *Limiter) sweep(now time.Time, perSec float64) {
	for k, b := range l.m {
		if b.tokens+now.Sub(b.at).Seconds()*perSec >= l.rate.Burst {
			delete(l.m, k)
		}
	}
	if len(l.m) >= l.max {
		clear(l.m) // a flood of distinct keys: forget rather than grow
	}
}
