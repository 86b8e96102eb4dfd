package devstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
)

// goroutineLabels is the goroutine profile's text: one "# labels: {...}"
// line for each group of goroutines that carry labels.
func goroutineLabels(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A goroutine started after enterStage carries the stage, one started
// after leaveStage does not.
func TestEnterStageLabelsTheGoroutinesStarted(t *testing.T) {
	ctx := context.Background()
	stop := make(chan struct{})
	defer close(stop)
	enterStage(ctx, StageBroker)
	go func() { <-stop }()
	leaveStage(ctx)
	if got := goroutineLabels(t); !strings.Contains(got, `# labels: {"stage":"broker"}`) {
		t.Fatalf("no goroutine labelled broker:\n%s", got)
	}
	enterStage(ctx, StageMatcher)
	leaveStage(ctx)
	go func() { <-stop }()
	if got := goroutineLabels(t); strings.Contains(got, `"stage":"matcher"`) {
		t.Fatalf("a goroutine started after leaveStage is labelled matcher:\n%s", got)
	}
}

func TestStagedRunsTheLoopWithItsStage(t *testing.T) {
	var got string
	err := staged(StageSettler, func(ctx context.Context) error {
		got, _ = pprof.Label(ctx, StageLabel)
		return context.Canceled
	})(context.Background())
	if got != StageSettler || err != context.Canceled {
		t.Fatalf("label %q, error %v; want settler and the loop's error", got, err)
	}
}

// The gateway labels a read as query-api and an order as ingress, on the
// goroutine that serves the request.
func TestGatewayLabelsEachRequestByService(t *testing.T) {
	seen := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(goroutineLabels(t), `# labels: {"stage":"`+name+`"}`) {
				t.Errorf("no goroutine labelled %s while it served %s", name, r.Method)
			}
		})
	}
	g := gateway{reads: newStagedHandler(StageQuery, seen(StageQuery)), writes: newStagedHandler(StageIngress, seen(StageIngress))}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(m, "/api/v1/wholeblock/order", nil))
		}()
		<-done
	}
}
