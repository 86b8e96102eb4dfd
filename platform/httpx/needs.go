package httpx

import "github.com/gin-gonic/gin"

// Needs answers 503 with Retry-After while the named dependency is down,
// according to errOf (usually a health monitor's last probe). Routes that
// cannot answer correctly without the dependency are wrapped in it, so a
// client learns at once that it may retry instead of waiting on a timeout.
func Needs(name string, errOf func() error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := errOf(); err != nil {
			Fail(c, Unavailable(name+" is unavailable, retry later", err))
			return
		}
		c.Next()
	}
}
