package httpx

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
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

// limitBody caps request bodies. A declared length above the cap is
// refused at once; a body that grows past it fails when it is decoded.
func limitBody(max int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > max {
			Fail(c, Invalid("request body of %d bytes exceeds the limit of %d bytes", c.Request.ContentLength, max))
			return
		}
		if c.Request.Body != nil && c.Request.Body != http.NoBody {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, max)
		}
		c.Next()
	}
}
