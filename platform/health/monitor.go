// Package health watches the dependencies of a service (Postgres, Kafka)
// and serves the operator endpoints: liveness, readiness and metrics.
package health

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Check probes one dependency; it returns nil when the dependency answers.
type Check func(ctx context.Context) error

// Monitor probes its checks on an interval and remembers the last result,
// so request paths can ask "is Postgres up?" without a round trip.
type Monitor struct {
	interval time.Duration
	timeout  time.Duration
	log      *slog.Logger

	mu     sync.RWMutex
	checks map[string]Check
	errs   map[string]error // last result per check; absent = not probed yet
}

// NewMonitor returns a monitor probing every interval, each probe bounded
// by timeout.
func NewMonitor(log *slog.Logger, interval, timeout time.Duration) *Monitor {
	return &Monitor{interval: interval, timeout: timeout, log: log, checks: map[string]Check{}, errs: map[string]error{}}
}

// Add registers a named check; call before Run.
func (m *Monitor) Add(name string, c Check) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checks[name] = c
}

// Run probes until ctx ends. The first round runs at once.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		m.ProbeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ProbeAll runs every check once and records the results.
func (m *Monitor) ProbeAll(ctx context.Context) {
	m.mu.RLock()
	names := make([]string, 0, len(m.checks))
	for n := range m.checks {
		names = append(names, n)
	}
	m.mu.RUnlock()
	sort.Strings(names)
	for _, name := range names {
		m.probe(ctx, name)
	}
}

func (m *Monitor) probe(ctx context.Context, name string) {
	m.mu.RLock()
	check := m.checks[name]
	prev, seen := m.errs[name]
	m.mu.RUnlock()
	pctx, cancel := context.WithTimeout(ctx, m.timeout)
	err := check(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	switch {
	case err != nil && (!seen || prev == nil):
		m.log.Warn("dependency down", "dependency", name, "error", err)
	case err == nil && seen && prev != nil:
		m.log.Info("dependency up", "dependency", name)
	}
	m.mu.Lock()
	m.errs[name] = err
	m.mu.Unlock()
}

// Err returns the last probe result of the named dependency: nil when it
// answered, an error when it did not or was never probed.
func (m *Monitor) Err(name string) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	err, seen := m.errs[name]
	if !seen {
		return errNotProbed{name}
	}
	return err
}

// Status returns the last result of every check, "ok" or the error text.
func (m *Monitor) Status() (map[string]string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]string, len(m.checks))
	ready := true
	for name := range m.checks {
		err, seen := m.errs[name]
		switch {
		case !seen:
			out[name], ready = "not probed yet", false
		case err != nil:
			out[name], ready = err.Error(), false
		default:
			out[name] = "ok"
		}
	}
	return out, ready
}

type errNotProbed struct{ name string }

func (e errNotProbed) Error() string { return e.name + " not probed yet" }
