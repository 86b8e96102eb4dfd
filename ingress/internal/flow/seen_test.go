package flow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSeenRepeatWaitsForTheFirstPublish: a repeat that arrives while the
// first publish runs is not acknowledged before it; when the first fails,
// the repeat publishes itself, so nothing is acknowledged that the log
// does not hold.
func TestSeenRepeatWaitsForTheFirstPublish(t *testing.T) {
	for _, tc := range []struct {
		name      string
		firstErr  error
		publishes int32
	}{
		{"first succeeds", nil, 1},
		{"first fails", errors.New("broker down"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSeen(time.Minute)
			var calls atomic.Int32
			release := make(chan struct{})
			entered := make(chan struct{})
			var firstErr, repeatErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				_, firstErr = s.Submit(context.Background(), "0xaa", func() error {
					calls.Add(1)
					close(entered)
					<-release
					return tc.firstErr
				})
			})
			<-entered
			repeated := make(chan struct{})
			wg.Go(func() {
				_, repeatErr = s.Submit(context.Background(), "0xaa", func() error { calls.Add(1); return nil })
				close(repeated)
			})
			select {
			case <-repeated:
				t.Fatal("the repeat was acknowledged while the first publish ran")
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			wg.Wait()
			if !errors.Is(firstErr, tc.firstErr) || repeatErr != nil || calls.Load() != tc.publishes {
				t.Fatalf("first %v, repeat %v, %d publishes", firstErr, repeatErr, calls.Load())
			}
			// Later repeats are answered from the set.
			repeat, err := s.Submit(context.Background(), "0xaa", func() error { t.Fatal("published again"); return nil })
			if err != nil || !repeat {
				t.Fatalf("a later repeat: %v, repeat %v", err, repeat)
			}
		})
	}
}

// TestSeenRepeatGivesUpWithItsContext: a waiting repeat ends with its
// caller's deadline.
func TestSeenRepeatGivesUpWithItsContext(t *testing.T) {
	s := NewSeen(time.Minute)
	entered, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = s.Submit(context.Background(), "0xbb", func() error { close(entered); <-release; return nil })
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Submit(ctx, "0xbb", func() error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	close(release)
}
