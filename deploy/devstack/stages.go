package devstack

import (
	"context"
	"net/http"
	"runtime/pprof"
)

// StageLabel is the pprof label that says which service a goroutine works
// for, so that a CPU profile of the one process splits by service
// (deploy/cmd/tradebench -cpuprofile). The stack sets it where it builds
// and runs each service: a goroutine inherits the labels of the one that
// starts it, so a service's Kafka clients, pools and servers carry its
// label. Setting a label is a pointer store; nothing is recorded unless a
// profile runs.
const StageLabel = "stage"

// The values of StageLabel. What carries none (the dev chain, the health
// monitor, the admin server, the runtime) is left unlabelled.
const (
	StageIngress = "ingress"         // order entry, auth, validators, the slot clock, the deposit watcher, orderflow edges
	StageMatcher = "matcher"         // the matcher
	StageSettler = "settler"         // the settler and the withdrawal executor
	StageQuery   = "query-api"       // feeds, WebSocket, REST reads, orderflow tracking reads
	StageRelay   = "orderflow-relay" // the orderflow relay
	StageBroker  = "broker"          // the embedded kfake broker
)

// enterStage labels the calling goroutine, and every goroutine it starts
// from now on, with stage; leaveStage(ctx) gives it back the labels of ctx.
func enterStage(ctx context.Context, stage string) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(StageLabel, stage)))
}

// leaveStage restores the labels of ctx on the calling goroutine.
func leaveStage(ctx context.Context) { pprof.SetGoroutineLabels(ctx) }

// staged runs loop with the goroutine labelled stage.
func staged(stage string, loop func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var err error
		pprof.Do(ctx, pprof.Labels(StageLabel, stage), func(ctx context.Context) { err = loop(ctx) })
		return err
	}
}

// stagedHandler labels the goroutine of each request (and so what the
// handler starts, such as a WebSocket's writer) with one stage.
type stagedHandler struct {
	labels context.Context // holds the labels only
	h      http.Handler
}

func newStagedHandler(stage string, h http.Handler) stagedHandler {
	return stagedHandler{labels: pprof.WithLabels(context.Background(), pprof.Labels(StageLabel, stage)), h: h}
}

func (s stagedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pprof.SetGoroutineLabels(s.labels)
	s.h.ServeHTTP(w, r)
}
