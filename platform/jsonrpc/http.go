package jsonrpc

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HeaderRequestID carries the correlation id of a request both ways, as in
// the REST frame.
const HeaderRequestID = "X-Request-ID"

// Call is one request as a method handler sees it: the HTTP request (for
// its path and query) and the decoded JSON-RPC request.
type Call struct {
	HTTP *http.Request
	Req  Request
}

// HandlerFunc answers one call with a result, or an error (a *Error is
// sent as it is, anything else as an internal error and logged).
type HandlerFunc func(ctx context.Context, call Call) (any, error)

// Config configures an HTTP JSON-RPC endpoint.
type Config struct {
	Service     string        // names the endpoint in logs and metrics
	Logger      *slog.Logger  // required
	Metrics     *Metrics      // optional
	MaxBody     int64         // largest request body in bytes (default 1 MiB)
	MaxInFlight int           // concurrent requests before 429 (default 1024)
	Timeout     time.Duration // per-request deadline (default 10s)
	// Route, when set, tells whether the endpoint serves the request's
	// path: the Error it returns (a 404) is the answer, before the method,
	// the headers or the body are looked at, so an unknown path answers
	// the same whatever was sent to it (404 unless the Error names a
	// status).
	Route func(r *http.Request) *Error
}

// Handler serves POST requests of JSON-RPC 2.0 bodies with handle. The
// rules, in order: a path Route serves (its Error otherwise); POST only (400 otherwise); Content-Type application/json
// (415); at most MaxInFlight concurrent requests (429 with Retry-After);
// a body of at most MaxBody bytes (413); then Parse. Errors are JSON-RPC
// error responses with HTTP 200 except where a status is named above or
// the handler's Error carries one; a 503 carries Retry-After as a 429 does,
// and an Error with RetryAfter carries that many seconds.
func Handler(cfg Config, handle HandlerFunc) http.Handler {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &server{cfg: cfg, handle: handle, ids: newIDs()}
}

type server struct {
	cfg      Config
	handle   HandlerFunc
	ids      *ids
	inFlight atomic.Int64
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := s.ids.assign(w, r)
	method, code := s.serve(w, r, id)
	s.cfg.Metrics.observe(s.cfg.Service, method, code, time.Since(start))
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, requestID string) (method string, code int) {
	if s.cfg.Route != nil {
		if e := s.cfg.Route(r); e != nil {
			return "-", s.fail(w, cmp.Or(e.HTTPStatus, http.StatusNotFound), nullID, e)
		}
	}
	if r.Method != http.MethodPost {
		return "-", s.fail(w, http.StatusBadRequest, nullID, Errorf(CodeInvalidRequest, "use HTTP POST with a JSON-RPC body"))
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return "-", s.fail(w, http.StatusUnsupportedMediaType, nullID, Errorf(CodeInvalidRequest, "Content-Type must be application/json"))
	}
	if n := s.inFlight.Add(1); n > int64(s.cfg.MaxInFlight) {
		s.inFlight.Add(-1)
		w.Header().Set("Retry-After", "1")
		return "-", s.fail(w, http.StatusTooManyRequests, nullID, Errorf(CodeRule, "server is at its limit of %d concurrent requests; retry after 1 s", s.cfg.MaxInFlight))
	}
	defer s.inFlight.Add(-1)
	body, tooLarge, err := readLimited(r.Body, s.cfg.MaxBody)
	if err != nil {
		return "-", s.fail(w, http.StatusBadRequest, nullID, Errorf(CodeParse, "parse error: cannot read body"))
	}
	if tooLarge {
		return "-", s.fail(w, http.StatusRequestEntityTooLarge, nullID, Errorf(CodeInvalidRequest, "request body is larger than %d bytes", s.cfg.MaxBody))
	}
	req, rid, perr := Parse(body)
	if perr != nil {
		return "-", s.fail(w, http.StatusOK, rid, perr)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	result, herr := s.handle(ctx, Call{HTTP: r, Req: req})
	if herr != nil {
		e := AsError(herr)
		if e.Code == CodeInternal {
			s.cfg.Logger.Error("json-rpc call failed", "service", s.cfg.Service, "method", req.Method, "request_id", requestID, "error", herr)
		}
		status := http.StatusOK
		if e.HTTPStatus != 0 {
			status = e.HTTPStatus
		}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(1, math.Ceil(e.RetryAfter.Seconds())))))
		} else if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		if e.Code == CodeMethodNotFound {
			return "unknown", s.fail(w, status, req.ID, e)
		}
		return req.Method, s.fail(w, status, req.ID, e)
	}
	out, err := EncodeResult(req.ID, result)
	if err != nil {
		s.cfg.Logger.Error("encode json-rpc result", "method", req.Method, "request_id", requestID, "error", err)
		return req.Method, s.fail(w, http.StatusOK, req.ID, AsError(err))
	}
	writeJSON(w, http.StatusOK, out)
	return req.Method, 0
}

func (s *server) fail(w http.ResponseWriter, status int, id json.RawMessage, e *Error) int {
	writeJSON(w, status, EncodeError(id, e))
	return e.Code
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Metrics counts JSON-RPC calls by method and error code (0 = success).
type Metrics struct {
	calls *prometheus.HistogramVec
}

// NewMetrics registers the frame's metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jsonrpc_call_duration_seconds",
		Help:    "JSON-RPC call latency by endpoint, method and error code (0 = success).",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5},
	}, []string{"endpoint", "method", "code"})
	if err := reg.Register(h); err != nil {
		var already prometheus.AlreadyRegisteredError
		if ok := asAlready(err, &already); ok {
			return &Metrics{calls: already.ExistingCollector.(*prometheus.HistogramVec)}, nil
		}
		return nil, err
	}
	return &Metrics{calls: h}, nil
}

func asAlready(err error, target *prometheus.AlreadyRegisteredError) bool {
	a, ok := err.(prometheus.AlreadyRegisteredError)
	if ok {
		*target = a
	}
	return ok
}

func (m *Metrics) observe(endpoint, method string, code int, elapsed time.Duration) {
	if m == nil {
		return
	}
	if len(method) > 64 {
		method = "-" // never let a client grow the label set without bound
	}
	m.calls.WithLabelValues(endpoint, method, strconv.Itoa(code)).Observe(elapsed.Seconds())
}

// ids makes request ids unique across processes: a random prefix and a
// counter.
type ids struct {
	prefix string
	n      atomic.Uint64
}

func newIDs() *ids {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &ids{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (s *ids) next() string { return s.prefix + strconv.FormatUint(s.n.Add(1), 36) }

// assign puts the request's id on the response, the client's when it is
// well-formed, else a new one, and returns it.
func (s *ids) assign(w http.ResponseWriter, r *http.Request) string {
	id := r.Header.Get(HeaderRequestID)
	if !validRequestID(id) {
		id = s.next()
	}
	w.Header().Set(HeaderRequestID, id)
	return id
}

// WithRequestID gives every response of next an X-Request-ID as Handler
// does, for the plain HTTP endpoints beside the JSON-RPC ones (API keys,
// tracking reads), so that any answer, a 500 above all, can be found in
// the log by RequestID.
func WithRequestID(next http.Handler) http.Handler {
	ids := newIDs()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids.assign(w, r)
		next.ServeHTTP(w, r)
	})
}

// RequestID returns the id WithRequestID put on w.
func RequestID(w http.ResponseWriter) string { return w.Header().Get(HeaderRequestID) }

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
