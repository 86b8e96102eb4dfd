// Package httpx is the REST frame shared by ingress and query-api: the
// response envelope, the application error model of the interface and its
// one mapping to HTTP, and the middleware every route runs behind.
package httpx

import (
	"errors"
	"fmt"
	"net/http"

	"blockspace.exchange/topics"
)

// Application codes of the interface (docs/codes.md "Application codes")
// that only the frame answers with. Malformed or out-of-range input is
// topics.CodeValidation (1001), which the matcher writes too; business
// codes are in topics and in the domain packages.
const (
	CodeAuth        = 1    // authentication required or access denied
	CodeTooMany     = 20   // concurrency or database pressure
	CodeUnavailable = 21   // a dependency is unavailable
	CodeFailed      = 1002 // business rule refused the operation
	CodeUnexpected  = 9999 // a bug or an unclassified failure
)

// Reasons a request is refused with 429 or 503: the reason label of
// http_refusals_total (docs/operations.md "Metrics"), a fixed list. The
// constructor of the refusal decides it (TooMany, Unavailable, Needs).
const (
	ReasonInFlight     = "in_flight"     // MaxInFlight requests (or WebSockets) already served
	ReasonDatabaseBusy = "database_busy" // the pool is taken and requests queue for it
	ReasonRateLimit    = "rate_limit"    // a client's rate limit
	ReasonPostgresDown = "postgres_down" // the last Postgres probe failed
	ReasonKafkaDown    = "kafka_down"    // the last Kafka probe failed
	// ReasonOverloaded is any other dependency that is down or did not
	// answer in time (Kafka not acknowledging, data still loading).
	ReasonOverloaded = "overloaded"
)

// reasons are the values Reason may take in the metrics.
var reasons = map[string]bool{ReasonInFlight: true, ReasonDatabaseBusy: true, ReasonRateLimit: true,
	ReasonPostgresDown: true, ReasonKafkaDown: true, ReasonOverloaded: true}

// Error is an application error: the HTTP status, the numeric code and
// message key of the interface, and a message that names what was wrong.
// Handlers return it (through Fail); the error middleware renders it.
type Error struct {
	Status     int
	Code       int
	Key        string
	Message    string
	RetryAfter int    // seconds; set for 429 and 503
	Reason     string // for 429 and 503: one of the Reason constants
	Cause      error  // logged, never shown to the client
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Cause)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Invalid is a 400 validation error (code 1001). The message should name
// the parameter and the rule, e.g. "chainId must be an integer".
func Invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: topics.CodeValidation, Key: "error.validation", Message: fmt.Sprintf(format, args...)}
}

// UnsupportedMedia is a 415 with the validation code: the body's
// Content-Type is not one the route reads.
func UnsupportedMedia(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnsupportedMediaType, Code: topics.CodeValidation, Key: "error.unsupportedMediaType", Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is a 401 with code 1; the middleware adds WWW-Authenticate.
func Unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeAuth, Key: "error.auth.required", Message: msg}
}

// Forbidden is a 403 with code 1.
func Forbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeAuth, Key: "error.auth.denied", Message: msg}
}

// Refused is an application failure answered with HTTP 200 and
// success:false, as the interface does for business rules.
func Refused(code int, key, format string, args ...any) *Error {
	return &Error{Status: http.StatusOK, Code: code, Key: key, Message: fmt.Sprintf(format, args...)}
}

// TooMany is a 429 with code 20 and a Retry-After of at least one second,
// refused for reason (ReasonInFlight, ReasonDatabaseBusy, ReasonRateLimit).
func TooMany(reason, msg string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: CodeTooMany, Key: "error.tooManyRequests", Message: msg, RetryAfter: 1, Reason: reason}
}

// Unavailable is a 503 with code 21: a dependency (Kafka, Postgres) cannot
// be reached, nothing was acknowledged, and the client may retry. Its
// reason is ReasonOverloaded; Needs names the dependency that is down.
func Unavailable(msg string, cause error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Key: "error.serviceUnavailable", Message: msg, RetryAfter: 1,
		Reason: ReasonOverloaded, Cause: cause}
}

// Unexpected is the 500 answer; its message is generic on purpose.
func unexpected(cause error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeUnexpected, Key: "error.unexpected", Message: "unexpected error", Cause: cause}
}

// ErrUnavailable marks errors of adapters whose dependency is down or
// overloaded; wrap it (fmt.Errorf("publish: %w: %v", ErrUnavailable, err))
// and the frame answers 503 instead of 500. Packages that do not depend on
// this one mark theirs with a method instead: an error in the chain with
// Unavailable() bool reporting true is answered 503 too.
var ErrUnavailable = errors.New("dependency unavailable")

// Classify turns any error into the application error the client sees.
// It is the one place that decides between 4xx, 503 and 500.
func Classify(err error) *Error {
	var appErr *Error
	if errors.As(err, &appErr) {
		return appErr
	}
	if isUnavailable(err) {
		return Unavailable("service temporarily unavailable, retry later", err)
	}
	return unexpected(err)
}
