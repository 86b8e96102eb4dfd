package httpx

import (
	"fmt"
	"sync/atomic"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
)

// limiter sheds load instead of queueing it without bound: a request is
// refused with 429 when the process already serves MaxInFlight requests,
// or when every database connection is taken and more requests wait than
// the pool can serve in DBQueueFactor rounds (except on queued routes,
// whose requests wait for a batch writer, not for a connection each).
type limiter struct {
	maxInFlight int64
	inFlight    atomic.Int64
	pool        *pgxpool.Pool
	maxConns    int64 // the pool's size, read once: Config() copies
	queueFactor int64
	queued      map[string]bool // route paths the database check passes over
}

func newLimiter(maxInFlight int, pool *pgxpool.Pool, queueFactor int, queued []string) *limiter {
	l := &limiter{maxInFlight: int64(maxInFlight), pool: pool, queueFactor: int64(queueFactor), queued: make(map[string]bool, len(queued))}
	for _, p := range queued {
		l.queued[p] = true
	}
	if pool != nil {
		l.maxConns = int64(pool.Config().MaxConns)
	}
	return l
}

func (l *limiter) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		n := l.inFlight.Add(1)
		defer l.inFlight.Add(-1)
		if n > l.maxInFlight {
			Fail(c, TooMany(ReasonInFlight, fmt.Sprintf("server is at its limit of %d concurrent requests", l.maxInFlight)))
			return
		}
		if !l.queued[c.FullPath()] && l.databaseBusy(n) {
			Fail(c, TooMany(ReasonDatabaseBusy, "database is busy"))
			return
		}
		c.Next()
	}
}

// databaseBusy reports whether the pool is exhausted while more requests
// are in flight than it can serve in queueFactor rounds.
func (l *limiter) databaseBusy(inFlight int64) bool {
	if l.pool == nil {
		return false
	}
	if inFlight <= l.maxConns*l.queueFactor {
		return false // cheap test first: Stat takes the pool's lock
	}
	return int64(l.pool.Stat().AcquiredConns()) >= l.maxConns
}
