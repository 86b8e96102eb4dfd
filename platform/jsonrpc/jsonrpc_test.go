package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, body string
		code       int
		id         string
	}{
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"m","params":[1]}`, 0, `"a"`},
		{"integer id", `{"jsonrpc":"2.0","id":7,"method":"m","params":[{}]}`, 0, `7`},
		{"not json", `{"jsonrpc":`, CodeParse, `null`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}]`, CodeInvalidRequest, `null`},
		{"not an object", `"x"`, CodeInvalidRequest, `null`},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"m","params":[1]}`, CodeInvalidRequest, `1`},
		{"missing version", `{"id":1,"method":"m","params":[1]}`, CodeInvalidRequest, `1`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"m","params":[1]}`, CodeInvalidRequest, `null`},
		{"missing id", `{"jsonrpc":"2.0","method":"m","params":[1]}`, CodeInvalidRequest, `null`},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"m","params":[1]}`, CodeInvalidRequest, `null`},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"m","params":[1]}`, CodeInvalidRequest, `null`},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":"","params":[1]}`, CodeInvalidRequest, `1`},
		{"numeric method", `{"jsonrpc":"2.0","id":1,"method":5,"params":[1]}`, CodeInvalidRequest, `1`},
		{"two params", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`, CodeInvalidParams, `1`},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"m","params":[]}`, CodeInvalidParams, `1`},
		{"object params", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`, CodeInvalidParams, `1`},
		{"missing params", `{"jsonrpc":"2.0","id":1,"method":"m"}`, CodeInvalidParams, `1`},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"id":2,"method":"m","params":[1]}`, CodeInvalidRequest, `null`},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1],"x":0}`, CodeInvalidRequest, `1`},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]} {}`, CodeParse, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, id, err := Parse([]byte(c.body))
			code := 0
			if err != nil {
				code = err.Code
			}
			if code != c.code || string(id) != c.id {
				t.Fatalf("code %d id %s (%v), want %d %s", code, id, err, c.code, c.id)
			}
			if err == nil && (req.Method != "m" || string(req.ID) != c.id) {
				t.Fatalf("request %+v", req)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	route := func(r *http.Request) *Error {
		if r.URL.Path == "/elsewhere" {
			return Errorf(CodeInvalidRequest, "unknown path")
		}
		return nil
	}
	h := Handler(Config{Service: "test", Logger: slog.New(slog.DiscardHandler), MaxBody: 200, Route: route},
		func(ctx context.Context, call Call) (any, error) {
			switch call.Req.Method {
			case "ok":
				return map[string]string{"x": "y"}, nil
			case "null":
				return nil, nil
			case "boom":
				return nil, io.ErrUnexpectedEOF
			case "busy":
				return nil, &Error{Code: CodeRule, Message: "busy", HTTPStatus: http.StatusServiceUnavailable}
			}
			return nil, Errorf(CodeMethodNotFound, "method %s not found", call.Req.Method)
		})
	srv := httptest.NewServer(h)
	defer srv.Close()
	cases := []struct {
		name, path, method, ctype, body string
		status                          int
		want                            string
	}{
		{"result", "/", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ok","params":[0]}`, 200, `{"jsonrpc":"2.0","id":1,"result":{"x":"y"}}`},
		{"null result", "/", "POST", "application/json; charset=utf-8", `{"jsonrpc":"2.0","id":"q","method":"null","params":[0]}`, 200, `{"jsonrpc":"2.0","id":"q","result":null}`},
		{"unknown method", "/", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"nope","params":[0]}`, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method nope not found"}}`},
		{"internal", "/", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"boom","params":[0]}`, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}`},
		{"wrong content type", "/", "POST", "text/plain", `{}`, 415, `"code":-32600`},
		{"GET", "/", "GET", "application/json", ``, 400, `"code":-32600`},
		{"too large", "/", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ok","params":["` + strings.Repeat("a", 300) + `"]}`, 413, `"code":-32600`},
		{"parse error", "/", "POST", "application/json", `{`, 200, `"code":-32700`},
		{"unknown path, bad body", "/elsewhere", "POST", "application/json", `{`, 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"unknown path"}}`},
		{"unknown path, GET", "/elsewhere", "GET", "text/plain", ``, 404, `"message":"unknown path"`},
		{"unavailable", "/", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"busy","params":[0]}`, 503, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ctype)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, c.status, c.want)
			}
			if resp.Header.Get(HeaderRequestID) == "" {
				t.Error("no request id")
			}
			if ra := resp.Header.Get("Retry-After"); (c.status == http.StatusServiceUnavailable) != (ra == "1") {
				t.Errorf("Retry-After %q with HTTP %d", ra, resp.StatusCode)
			}
			if !json.Valid(body) {
				t.Errorf("body is not JSON: %s", body)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"eth_sendBundle","params":[{"txs":[]}]}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, id, err := Parse(b)
		if !json.Valid(id) {
			t.Fatalf("id %q is not JSON", id)
		}
		if !json.Valid(EncodeError(id, Errorf(CodeParse, "x"))) {
			t.Fatal("error response is not JSON")
		}
		if err != nil {
			return
		}
		if req.Method == "" || !validID(req.ID) || !json.Valid(req.Param) {
			t.Fatalf("accepted %q as %+v", b, req)
		}
	})
}
