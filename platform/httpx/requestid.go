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

// forRequest is the client's id when it is well formed, else a new one.
func (s *idSource) forRequest(client string) string {
	if validRequestID(client) {
		return client
	}
	return s.next()
}

// RequestIDs gives request ids to a handler served beside an engine rather
// than through it (the WebSocket), so that its answers carry X-Request-ID
// as every answer of the interface does.
type RequestIDs struct{ src *idSource }

// NewRequestIDs returns ids unique across processes, as an engine's are.
func NewRequestIDs() *RequestIDs { return &RequestIDs{src: newIDSource()} }

// Set puts r's well-formed X-Request-ID, or a new id, on w's headers.
func (ids *RequestIDs) Set(w http.ResponseWriter, r *http.Request) {
	w.Header()[canonicalRequestID] = []string{ids.src.forRequest(r.Header.Get(HeaderRequestID))}
}

// requestIDMiddleware echoes a well-formed client id or assigns one, and
// puts it on the response before anything else can answer.
func requestIDMiddleware(ids *idSource) gin.HandlerFunc {
	return func(c *gin.Context) {
		// The response header is the one place the id is kept: a context
		// key would allocate gin's Keys map on every request.
		c.Writer.Header()[canonicalRequestID] = []string{ids.forRequest(c.GetHeader(HeaderRequestID))}
		c.Next()
	}
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
