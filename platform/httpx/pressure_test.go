package httpx

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestDatabasePressureAnswers429 holds every pool connection while more
// requests are in flight than the pool serves in one round: the next
// request is shed with 429 instead of queueing on the pool, except on a
// queued route, whose requests wait for a batch writer.
func TestDatabasePressureAnswers429(t *testing.T) {
	pool := pgtest.New(t, nil)
	maxConns := int(pool.Config().MaxConns)
	e := newTestEngine(t, io.Discard, func(c *Config) {
		c.DBPool = pool
		c.DBQueueFactor = 1
		c.QueuedRoutes = []string{"/queued/:id"}
	})
	e.GET("/queued/:id", func(c *gin.Context) { OK(c, struct{}{}) })
	release := make(chan struct{})
	entered := make(chan struct{}, maxConns)
	e.GET("/wait", func(c *gin.Context) { entered <- struct{}{}; <-release; OK(c, struct{}{}) })

	if a := do(e, "GET", "/api/v1/p/tokens", "", ""); a.status != 200 {
		t.Fatalf("idle pool: %d", a.status)
	}
	conns := holdAll(t, pool, maxConns)
	var wg sync.WaitGroup
	for i := 0; i < maxConns; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); do(e, "GET", "/wait", "", "") }()
	}
	for i := 0; i < maxConns; i++ {
		<-entered
	}
	a := do(e, "GET", "/api/v1/p/tokens", "", "")
	if a.status != 429 || a.body["code"] != float64(CodeTooMany) || a.header.Get("Retry-After") != "1" || a.body["message"] != "database is busy" {
		t.Fatalf("exhausted pool: %d %s", a.status, a.raw)
	}
	if a := do(e, "GET", "/queued/7", "", ""); a.status != 200 {
		t.Fatalf("queued route with an exhausted pool: %d %s", a.status, a.raw)
	}
	for _, c := range conns {
		c.Release()
	}
	close(release)
	wg.Wait()
	if a := do(e, "GET", "/api/v1/p/tokens", "", ""); a.status != 200 {
		t.Fatalf("after release: %d", a.status)
	}
}

func holdAll(t *testing.T, pool *pgxpool.Pool, n int) []*pgxpool.Conn {
	t.Helper()
	var conns []*pgxpool.Conn
	for i := 0; i < n; i++ {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}
