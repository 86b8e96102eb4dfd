package kafka

import (
	"context"
	"testing"
	"time"
)

func TestProbeStartup(t *testing.T) {
	ctx := testContext(t)
	cfg := startBroker(t, ctx)
	slots := make([]uint64, 16)
	for i := range slots {
		slots[i] = uint64(1000 + i)
	}
	envs := commandStream(t, slots, 40000/16)
	l := newLoop(t, cfg, 10000)
	defer l.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- l.Run(runCtx) }()
	for l.Stats().Assigned.Load() < 16 {
		time.Sleep(time.Millisecond)
	}
	t.Logf("assigned at %v", time.Since(start))
	produceCommands(t, ctx, cfg, envs)
	t.Logf("produced at %v", time.Since(start))
	var first time.Duration
	last := int64(0)
	for l.Stats().Records.Load() < int64(len(envs)) {
		if n := l.Stats().Records.Load(); n != last {
			t.Logf("%v: %d", time.Since(start), n)
			last = n
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("first %v all %v", first, time.Since(start))
	stop()
	<-done
}
