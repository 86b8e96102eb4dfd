package devpostgres

import (
	"context"
	"time"
)

// pollInterval is how often we look again while waiting for the server. Short,
// because a local server starts and stops in well under a second.
const pollInterval = 20 * time.Millisecond

// poll calls done until it reports true or ctx ends.
func poll(ctx context.Context, done func() bool) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
	return nil
}
