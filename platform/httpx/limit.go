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
// the pool can serve in DBQueueFactor rounds.
type limiter struct {
	maxInFlight int64
	inFlight    atomic.Int64
	pool        *pgxpool.Pool
	queueFactor int64
}

func (l *limiter) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		n := l.inFlight.Add(1)
		defer l.inFlight.Add(-1)
		if n > l.maxInFlight {
			Fail(c, TooMany(fmt.Sprintf("server is at its limit of %d concurrent requests", l.maxInFlight)))
			return
		}
		if l.databaseBusy(n) {
			Fail(c, TooMany("database is busy"))
			return
		}
		c.Next()
	}
}

// databaseBusy reads the pool's counters, which pgxpool keeps without
// locking the hot path.
func (l *limiter) databaseBusy(inFlight int64) bool {
	if l.pool == nil {
		return false
	}
	st := l.pool.Stat()
	maxConns := int64(st.MaxConns())
	return int64(st.AcquiredConns()) >= maxConns && inFlight > maxConns*l.queueFactor
}
