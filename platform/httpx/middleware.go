package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/topics"
)

// observe logs one structured line per request and records its latency.
// Successful requests log at debug level so that access logs at high
// request rates are opt-in; failures log at info (4xx), warn (503, 429)
// and error (500, with the cause), and so does a successful answer that
// recorded an error (Partial) at warn, with the error.
func observe(log *slog.Logger, m *Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		elapsed := time.Since(start)
		status := c.Writer.Status()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		m.observe(c.Request.Method, route, status, elapsed)
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			m.Refused(refusal(c, status))
		}
		level := slog.LevelDebug
		switch {
		case status >= 500 && status != http.StatusServiceUnavailable:
			level = slog.LevelError
		case status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests:
			level = slog.LevelWarn
		case status >= 400:
			level = slog.LevelInfo
		case len(c.Errors) > 0:
			level = slog.LevelWarn
		}
		if !log.Enabled(c, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("request_id", RequestID(c)),
			slog.String("method", c.Request.Method),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Duration("elapsed", elapsed),
		}
		if errs := c.Errors; len(errs) > 0 {
			attrs = append(attrs, slog.String("error", errs.Last().Err.Error()))
		}
		log.LogAttrs(c, level, "http request", attrs...)
	}
}

// refusal is the error a 429 or 503 answer rendered; one written without
// an *Error (it should not happen) counts as overloaded.
func refusal(c *gin.Context, status int) *Error {
	if last := c.Errors.Last(); last != nil {
		if e := Classify(last.Err); e.Status == status {
			return e
		}
	}
	return &Error{Status: status, Reason: ReasonOverloaded}
}

// renderErrors turns the error a handler recorded with Fail into the
// interface's ApplicationError. It is the single place where errors meet
// HTTP statuses.
func renderErrors() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if len(c.Errors) == 0 || c.Writer.Written() {
			return
		}
		writeError(c, Classify(c.Errors.Last().Err))
	}
}

// recoverPanics converts a panicking handler into a 500 answer with the
// request id logged, so one bad request never takes the process down.
func recoverPanics() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			Fail(c, fmt.Errorf("panic: %v", r))
		}()
		c.Next()
	}
}

// readBody caps request bodies and reads them whole before the request
// counts against MaxInFlight, so slow senders hold a goroutine for at most
// timeout and never a place among the requests being served. A declared
// length above the cap is refused at once, a body that grows past it is a
// 400 and one that has not arrived within timeout a 408; the handlers then
// read it from memory. The connection's read deadline is cleared once the
// body is in, so a handler that runs longer is not cancelled by it.
func readBody(max int64, timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > max {
			Fail(c, Invalid("request body of %d bytes exceeds the limit of %d bytes", c.Request.ContentLength, max))
			return
		}
		if c.Request.Body == nil || c.Request.Body == http.NoBody {
			c.Next()
			return
		}
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetReadDeadline(time.Now().Add(timeout)) // unsupported only on test recorders
		body, err := readAll(http.MaxBytesReader(c.Writer, c.Request.Body, max), c.Request.ContentLength)
		if err != nil {
			Fail(c, bodyError(err, timeout))
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		c.Request.ContentLength = int64(len(body))
		c.Next()
	}
}

// bodyError tells the client why its body was not read.
func bodyError(err error, timeout time.Duration) *Error {
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
	case errors.As(err, &netErr) && netErr.Timeout():
		return &Error{Status: http.StatusRequestTimeout, Code: topics.CodeValidation, Key: "error.requestTimeout",
			Message: fmt.Sprintf("request body did not arrive within %s", timeout)}
	default:
		return Invalid("request body could not be read: %v", err)
	}
}
