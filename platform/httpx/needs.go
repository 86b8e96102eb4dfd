package httpx

import "github.com/gin-gonic/gin"

// Needs answers 503 with Retry-After while the named dependency is down,
// according to errOf (usually a health monitor's last probe). Routes that
// cannot answer correctly without the dependency are wrapped in it, so a
// client learns at once that it may retry instead of waiting on a timeout.
func Needs(name string, errOf func() error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := errOf(); err != nil {
			e := Unavailable(name+" is unavailable, retry later", err)
			e.Reason = downReason(name)
			Fail(c, e)
			return
		}
		c.Next()
	}
}

// downReason is the refusal reason of a dependency that is down.
func downReason(name string) string {
	switch name {
	case "postgres":
		return ReasonPostgresDown
	case "kafka":
		return ReasonKafkaDown
	}
	return ReasonOverloaded
}
