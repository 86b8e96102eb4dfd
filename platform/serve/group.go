package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"reflect"
	"runtime"
	"strings"
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
// when every goroutine has returned. The error of a failed member names
// it: the listener's address, or the loop's function.
func (g Group) Run(ctx context.Context) error {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	eg, gctx := errgroup.WithContext(runCtx)
	for _, s := range g.Servers {
		eg.Go(func() error {
			if err := HTTP(gctx, s.Listener, s.Handler, g.Grace); err != nil {
				return fmt.Errorf("serve %s: %w", s.Listener.Addr(), err)
			}
			return nil
		})
	}
	for _, loop := range g.Loops {
		eg.Go(func() error {
			if err := loop(gctx); err != nil {
				return fmt.Errorf("loop %s: %w", loopName(loop), err)
			}
			return nil
		})
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

// loopName is the name of a loop's function without its module path,
// e.g. devstack.(*Stack).runMatcher, so that an error says which loop
// ended the group.
func loopName(loop func(context.Context) error) string {
	fn := runtime.FuncForPC(reflect.ValueOf(loop).Pointer())
	if fn == nil {
		return "unnamed"
	}
	return strings.TrimSuffix(path.Base(fn.Name()), "-fm")
}
