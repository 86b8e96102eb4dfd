package ratelimit

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := New(Rate{PerMinute: 60, Burst: 2}, 3, func() time.Time { return now })
	if ok, _ := l.Has("a"); !ok || len(l.m) != 0 {
		t.Fatalf("Has of an unknown key: %v, %d buckets", ok, len(l.m))
	}
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("first")
	}
	l.Allow("a")
	if ok, wait := l.Has("a"); ok || wait <= 0 {
		t.Fatalf("Has of an empty bucket: %v %v", ok, wait)
	}
	ok, wait := l.Allow("a")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third: %v %v", ok, wait)
	}
	now = now.Add(time.Second)
	if ok, _ := l.Has("a"); !ok {
		t.Fatal("Has after refill")
	}
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("after refill: Has took the token")
	}
	for _, k := range []string{"b", "c", "d", "e"} {
		l.Allow(k)
	}
	if len(l.m) > 3 {
		t.Fatalf("limiter holds %d buckets", len(l.m))
	}
}
