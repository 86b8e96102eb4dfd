package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/topics"
)

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func newTestEngine(t *testing.T, logs io.Writer, mutate func(*Config)) *gin.Engine {
	t.Helper()
	cfg := Config{
		Service: "test",
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Routes: []Route{
			{Method: "GET", Path: "/api/v1/p/tokens"},
			{Method: "GET", Path: "/api/v1/user/account/{accountId}"},
			{Method: "POST", Path: "/api/v1/wholeblock/order"},
		},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.GET("/api/v1/p/tokens", func(c *gin.Context) { OK(c, map[string]any{"tokens": []string{}}) })
	e.GET("/invalid", func(c *gin.Context) { Fail(c, Invalid("chainId must be an integer")) })
	e.GET("/unauthorized", func(c *gin.Context) { Fail(c, Unauthorized("access token is missing")) })
	e.GET("/forbidden", func(c *gin.Context) { Fail(c, Forbidden("account 7 is not yours")) })
	e.GET("/refused", func(c *gin.Context) { Fail(c, Refused(123, "error.account.insufficientFund", "insufficient funds")) })
	e.GET("/unavailable", func(c *gin.Context) { Fail(c, fmt.Errorf("publish: %w", ErrUnavailable)) })
	e.GET("/unavailable-marked", func(c *gin.Context) { Fail(c, fmt.Errorf("publish: %w", markedUnavailable(true))) })
	e.GET("/available-marked", func(c *gin.Context) { Fail(c, fmt.Errorf("publish: %w", markedUnavailable(false))) })
	e.GET("/boom", func(c *gin.Context) { Fail(c, errors.New("secret internal detail")) })
	e.GET("/panic", func(c *gin.Context) { panic("secret panic detail") })
	e.GET("/partial", func(c *gin.Context) {
		Partial(c, errors.New("item 2 not processed: connection reset"))
		OK(c, map[string]any{})
	})
	e.POST("/api/v1/wholeblock/order", RequireJSON(), func(c *gin.Context) {
		var v map[string]any
		if err := DecodeJSON(c, &v); err != nil {
			Fail(c, err)
			return
		}
		OK(c, v)
	})
	return e
}

func do(e http.Handler, method, path, contentType, body string, header ...string) answer {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	_ = json.Unmarshal(rec.Body.Bytes(), &a.body)
	return a
}

func TestErrorModel(t *testing.T) {
	var logs bytes.Buffer
	e := newTestEngine(t, &logs, nil)
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code                            float64 // 0 = success envelope
		header, headerValue             string
		msgHas                          string
	}{
		{name: "success envelope", method: "GET", path: "/api/v1/p/tokens", status: 200},
		{name: "validation", method: "GET", path: "/invalid", status: 400, code: 1001, msgHas: "chainId"},
		{name: "unauthorized", method: "GET", path: "/unauthorized", status: 401, code: 1, header: "WWW-Authenticate", headerValue: "Bearer"},
		{name: "forbidden", method: "GET", path: "/forbidden", status: 403, code: 1},
		{name: "business refusal is 200", method: "GET", path: "/refused", status: 200, code: 123},
		{name: "unavailable", method: "GET", path: "/unavailable", status: 503, code: 21, header: "Retry-After", headerValue: "1"},
		{name: "marked unavailable", method: "GET", path: "/unavailable-marked", status: 503, code: 21, header: "Retry-After", headerValue: "1"},
		{name: "marked available", method: "GET", path: "/available-marked", status: 500, code: 9999},
		{name: "unexpected", method: "GET", path: "/boom", status: 500, code: 9999, msgHas: "request id"},
		{name: "panic", method: "GET", path: "/panic", status: 500, code: 9999},
		{name: "wrong method on own path", method: "DELETE", path: "/api/v1/p/tokens", status: 400, code: 1001, msgHas: "use GET"},
		{name: "wrong method on other service's path", method: "POST", path: "/api/v1/user/account/42", status: 400, code: 1001, msgHas: "use GET"},
		{name: "unknown path", method: "GET", path: "/api/v1/nope", status: 404, code: 1001},
		{name: "non-JSON body", method: "POST", path: "/api/v1/wholeblock/order", ctype: "text/plain", body: "x", status: 415, code: 1001, msgHas: "application/json"},
		{name: "missing content type", method: "POST", path: "/api/v1/wholeblock/order", body: "{}", status: 415, code: 1001},
		{name: "malformed JSON", method: "POST", path: "/api/v1/wholeblock/order", ctype: "application/json", body: `{"a":`, status: 400, code: 1001, msgHas: "malformed JSON"},
		{name: "wrong JSON type", method: "POST", path: "/api/v1/wholeblock/order", ctype: "application/json", body: `[1]`, status: 400, code: 1001, msgHas: "body must be"},
		{name: "trailing data", method: "POST", path: "/api/v1/wholeblock/order", ctype: "application/json", body: `{} {}`, status: 400, code: 1001, msgHas: "after the JSON"},
		{name: "JSON with charset", method: "POST", path: "/api/v1/wholeblock/order", ctype: "application/json; charset=utf-8", body: `{"a":1}`, status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := do(e, tc.method, tc.path, tc.ctype, tc.body)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tc.status, a.raw)
			}
			if a.header.Get(HeaderRequestID) == "" {
				t.Error("no X-Request-ID on the response")
			}
			if tc.code == 0 {
				if a.body["success"] != true || a.body["data"] == nil {
					t.Fatalf("want success envelope, got %s", a.raw)
				}
				return
			}
			if a.body["success"] != false || a.body["code"] != tc.code || a.body["errorMsgKey"] == "" || a.body["data"] == nil {
				t.Fatalf("want ApplicationError code %v, got %s", tc.code, a.raw)
			}
			if tc.header != "" && a.header.Get(tc.header) != tc.headerValue {
				t.Errorf("%s = %q, want %q", tc.header, a.header.Get(tc.header), tc.headerValue)
			}
			if !strings.Contains(a.body["message"].(string), tc.msgHas) {
				t.Errorf("message %q does not mention %q", a.body["message"], tc.msgHas)
			}
			if strings.Contains(a.raw, "secret") {
				t.Errorf("internal detail leaked to the client: %s", a.raw)
			}
		})
	}
	if !strings.Contains(logs.String(), "secret internal detail") {
		t.Error("the cause of a 500 was not logged")
	}
}

func TestRequestIDEchoedOrAssigned(t *testing.T) {
	e := newTestEngine(t, io.Discard, nil)
	if got := do(e, "GET", "/api/v1/p/tokens", "", "", HeaderRequestID, "client-abc-123").header.Get(HeaderRequestID); got != "client-abc-123" {
		t.Errorf("client id not echoed: %q", got)
	}
	hostile := "bad id\r\nSet-Cookie: x=1"
	got := do(e, "GET", "/api/v1/p/tokens", "", "", HeaderRequestID, hostile).header.Get(HeaderRequestID)
	if got == "" || got == hostile {
		t.Errorf("hostile id not replaced: %q", got)
	}
	a := do(e, "GET", "/boom", "", "")
	b := do(e, "GET", "/boom", "", "")
	ida, idb := a.header.Get(HeaderRequestID), b.header.Get(HeaderRequestID)
	if ida == idb || !strings.Contains(a.body["message"].(string), ida) {
		t.Errorf("ids %q %q must differ and be quoted in the 500 message %q", ida, idb, a.body["message"])
	}
}

func TestBodyCap(t *testing.T) {
	e := newTestEngine(t, io.Discard, func(c *Config) { c.MaxBodyBytes = 64 })
	big := `{"a":"` + strings.Repeat("x", 100) + `"}`
	a := do(e, "POST", "/api/v1/wholeblock/order", "application/json", big)
	if a.status != 400 || a.body["code"] != float64(1001) || !strings.Contains(a.body["message"].(string), "limit of 64 bytes") {
		t.Fatalf("oversized body: %d %s", a.status, a.raw)
	}
	// A chunked body declares no length and is cut while it is read.
	req := httptest.NewRequest("POST", "/api/v1/wholeblock/order", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "limit of 64 bytes") {
		t.Fatalf("chunked oversized body: %d %s", rec.Code, rec.Body)
	}
}

func TestConcurrencyLimitAnswers429(t *testing.T) {
	const limit = 3
	release := make(chan struct{})
	entered := make(chan struct{}, limit)
	e := newTestEngine(t, io.Discard, func(c *Config) { c.MaxInFlight = limit })
	e.GET("/slow", func(c *gin.Context) {
		entered <- struct{}{}
		<-release
		OK(c, struct{}{})
	})
	var wg sync.WaitGroup
	statuses := make(chan int, limit)
	for i := 0; i < limit; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- do(e, "GET", "/slow", "", "").status
		}()
	}
	for i := 0; i < limit; i++ {
		<-entered
	}
	a := do(e, "GET", "/api/v1/p/tokens", "", "")
	if a.status != 429 || a.body["code"] != float64(20) || a.header.Get("Retry-After") != "1" {
		t.Fatalf("request over the limit: %d %v %s", a.status, a.header, a.raw)
	}
	close(release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("request within the limit got %d", s)
		}
	}
	if a := do(e, "GET", "/api/v1/p/tokens", "", ""); a.status != 200 {
		t.Errorf("after the burst: %d", a.status)
	}
}

func TestNeedsAnswers503WhileDependencyDown(t *testing.T) {
	var down error = errors.New("connection refused")
	e := newTestEngine(t, io.Discard, nil)
	e.GET("/needs", Needs("postgres", func() error { return down }), func(c *gin.Context) { OK(c, struct{}{}) })
	a := do(e, "GET", "/needs", "", "")
	if a.status != 503 || a.body["code"] != float64(21) || a.header.Get("Retry-After") == "" || !strings.Contains(a.body["message"].(string), "postgres") {
		t.Fatalf("dependency down: %d %s", a.status, a.raw)
	}
	down = nil
	if a := do(e, "GET", "/needs", "", ""); a.status != 200 {
		t.Fatalf("dependency up: %d %s", a.status, a.raw)
	}
}

func TestQueryInt64(t *testing.T) {
	cases := []struct {
		name, query string
		want        int64
		errHas      string
	}{
		{"decimal", "chainId=1", 1, ""},
		{"hex", "chainId=0x88BB0", 0x88BB0, ""},
		{"missing", "", 0, "is required"},
		{"blank", "chainId=", 0, "is required"},
		{"text", "chainId=abc", 0, "must be an integer"},
		{"zero", "chainId=0", 0, "between 1"},
		{"negative", "chainId=-5", 0, "between 1"},
		{"overflow", "chainId=99999999999999999999", 0, "must be an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest("GET", "/x?"+tc.query, nil)
			got, err := QueryInt64(c, "chainId", true, 0, 1, 1<<62)
			if tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %d, %v; want %d", got, err, tc.want)
				}
				return
			}
			var appErr *Error
			if !errors.As(err, &appErr) || appErr.Code != topics.CodeValidation || !strings.Contains(appErr.Message, tc.errHas) || !strings.Contains(appErr.Message, "chainId") {
				t.Fatalf("got %v, want validation error mentioning chainId and %q", err, tc.errHas)
			}
		})
	}
}

func TestQueryBool(t *testing.T) {
	cases := []struct {
		query   string
		def     bool
		want    bool
		invalid bool
	}{
		{"", true, true, false},
		{"onbook=", false, false, false},
		{"onbook=true", false, true, false},
		{"onbook=TRUE", false, true, false},
		{"onbook=1", false, true, false},
		{"onbook=false", true, false, false},
		{"onbook=0", true, false, false},
		{"onbook=yes", false, false, true},
		{"onbook=2", false, false, true},
		{"onbook=t", false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			c, _ := gin.CreateTestContext(httptest.NewRecorder())
			c.Request = httptest.NewRequest("GET", "/x?"+tc.query, nil)
			got, err := QueryBool(c, "onbook", tc.def)
			if !tc.invalid {
				if err != nil || got != tc.want {
					t.Fatalf("got %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			var appErr *Error
			if !errors.As(err, &appErr) || appErr.Code != topics.CodeValidation || !strings.Contains(appErr.Message, "onbook") {
				t.Fatalf("got %v, want a validation error naming onbook", err)
			}
		})
	}
}

func FuzzDecodeJSONBytes(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `[`, `"x"`, `{"a":"b"} x`, `{"a":"1"}]`, ``, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v struct {
			A json.Number `json:"a"`
			B []string    `json:"b"`
		}
		err := DecodeJSONBytes(body, &v)
		if err == nil {
			if !json.Valid(body) {
				t.Fatalf("accepted a body that is not one JSON document: %q", body)
			}
			return
		}
		var appErr *Error
		if !errors.As(err, &appErr) || appErr.Status != 400 || appErr.Code != topics.CodeValidation || appErr.Message == "" {
			t.Fatalf("decode error is not a 400 validation error: %#v", err)
		}
	})
}

// A success that recorded an error (Partial) answers 200 and logs the
// request at warn with the error, where a plain success logs at debug.
func TestPartialSuccessLogsItsError(t *testing.T) {
	var logs bytes.Buffer
	e := newTestEngine(t, &logs, nil)
	if a := do(e, "GET", "/partial", "", ""); a.status != 200 || a.body["success"] != true {
		t.Fatalf("partial: %d %v", a.status, a.body)
	}
	var line struct {
		Level, Error string
	}
	if err := json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if line.Level != "WARN" || !strings.Contains(line.Error, "connection reset") {
		t.Fatalf("logged %+v, want WARN with the error", line)
	}
}

// markedUnavailable is an error of a package that does not import httpx
// and says with a method whether its dependency is unavailable.
type markedUnavailable bool

func (m markedUnavailable) Error() string     { return "broker did not answer" }
func (m markedUnavailable) Unavailable() bool { return bool(m) }
