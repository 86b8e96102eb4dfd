package serve

import (
	"context"
	"time"
)

// Every calls fn each interval until ctx ends, the shape of every
// refresh loop (caches, key sets). A failed call is reported to onErr and
// retried at the next tick; errors after ctx ended are not reported.
func Every(ctx context.Context, interval time.Duration, fn func(context.Context) error, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				onErr(err)
			}
		}
	}
}
