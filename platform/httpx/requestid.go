package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/gin-gonic/gin"
)

const (
	// HeaderRequestID carries the correlation id of a request both ways.
	HeaderRequestID = "X-Request-ID"
	maxRequestIDLen = 128
	// canonicalRequestID is the header map key of HeaderRequestID.
	canonicalRequestID = "X-Request-Id"
)

// idSource makes request ids that are unique across processes (a random
// prefix per process) and cheap (a counter per request).
type idSource struct {
	prefix string
	n      atomic.Uint64
}

func newIDSource() *idSource {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &idSource{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (s *idSource) next() string {
	return s.prefix + strconv.FormatUint(s.n.Add(1), 36)
}

// requestIDMiddleware echoes a well-formed client id or assigns one, and
// puts it on the response before anything else can answer.
func requestIDMiddleware(ids *idSource) gin.HandlerFunc {
	return func(c *gin.Context) {
		// The response header is the one place the id is kept: a context
		// key would allocate gin's Keys map on every request.
		ids.assign(c.Writer.Header(), c.GetHeader(HeaderRequestID))
		c.Next()
	}
}

// assign puts on the response headers h the client's id when it is
// well-formed, else a new one.
func (s *idSource) assign(h http.Header, client string) {
	id := client
	if !validRequestID(id) {
		id = s.next()
	}
	h[canonicalRequestID] = []string{id}
}

// WithRequestID gives every response of next an X-Request-ID as the
// engine's middleware does, for a handler served beside the engine (the
// WebSocket upgrade, whose refusals are answers like any other).
func WithRequestID(next http.Handler) http.Handler {
	ids := newIDSource()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids.assign(w.Header(), r.Header.Get(HeaderRequestID))
		next.ServeHTTP(w, r)
	})
}

// validRequestID accepts visible ASCII up to a bounded length, so a client
// id can be echoed into headers and logs without injection.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// RequestID returns the id of the request being served.
func RequestID(c *gin.Context) string {
	if v := c.Writer.Header()[canonicalRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}
