// Package sweep runs the periodic deletion of rows that expired, so
// tables that every anonymous request writes to stay bounded.
package sweep

import (
	"context"
	"log/slog"
	"time"
)

// Func deletes what expired before now and says how many rows it removed.
type Func func(ctx context.Context, now time.Time) (int64, error)

// Every runs fn at once and then every interval until ctx ends. A failed
// run is logged and retried at the next tick.
func Every(ctx context.Context, every time.Duration, what string, fn Func, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := fn(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sweep expired rows", "table", what, "error", err)
		case n > 0:
			log.Debug("swept expired rows", "table", what, "rows", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
