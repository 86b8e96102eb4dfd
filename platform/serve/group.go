package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
)

// Listening is a bound listener and the handler that serves it.
type Listening struct {
	Listener net.Listener
	Handler  http.Handler
}

// Group is everything one process serves and runs: HTTP listeners and
// background loops (health probes, cache reloads, consumers).
type Group struct {
	Servers []Listening
	Loops   []func(context.Context) error
	// Grace is how long in-flight requests get to finish at shutdown.
	Grace time.Duration
	// Draining is called first when shutdown begins, so that readiness
	// fails before the listeners stop (health.Admin.Drain).
	Draining func()
}

// Run serves and runs the group until ctx ends or one member fails. Then
// it shuts down in order: Draining, the listeners stop accepting and wait
// for in-flight requests, the loops see their context end; Run returns
// when every goroutine has returned.
func (g Group) Run(ctx context.Context) error {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	eg, gctx := errgroup.WithContext(runCtx)
	for _, s := range g.Servers {
		eg.Go(func() error { return HTTP(gctx, s.Listener, s.Handler, g.Grace) })
	}
	for _, loop := range g.Loops {
		eg.Go(func() error { return loop(gctx) })
	}
	select {
	case <-ctx.Done():
	case <-gctx.Done():
	}
	if g.Draining != nil {
		g.Draining()
	}
	stop()
	if err := eg.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
