package health

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Admin serves the operator endpoints of a process: /healthz (alive),
// /readyz (dependencies up and not draining) and /metrics (Prometheus).
type Admin struct {
	monitors []*Monitor
	draining atomic.Bool
	gatherer prometheus.Gatherer
}

// NewAdmin returns the admin handler over the given monitors and registry.
func NewAdmin(g prometheus.Gatherer, monitors ...*Monitor) *Admin {
	return &Admin{monitors: monitors, gatherer: g}
}

// Drain makes readiness fail, the first step of an orderly shutdown: load
// balancers stop sending new work while in-flight work finishes.
func (a *Admin) Drain() { a.draining.Store(true) }

// Handler returns the admin routes.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "alive"})
	})
	mux.HandleFunc("GET /readyz", a.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.gatherer, promhttp.HandlerOpts{}))
	return mux
}

func (a *Admin) ready(w http.ResponseWriter, _ *http.Request) {
	deps := map[string]string{}
	ready := !a.draining.Load()
	for _, m := range a.monitors {
		st, ok := m.Status()
		for k, v := range st {
			deps[k] = v
		}
		ready = ready && ok
	}
	status, code := "ready", http.StatusOK
	if !ready {
		status, code = "not ready", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "draining": a.draining.Load(), "dependencies": deps})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
