package funding

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// FuzzParseIDs feeds outside text to the requestIds parser: it never
// panics, accepts only 1 to 100 positive ids, and refuses everything else
// with a 400 that names the parameter.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"1", "1,2,3", " 7 , 8", "", ",", "0", "-1", "1,a", "9223372036854775807", "9223372036854775808",
		strings.Repeat("1,", 100) + "1", "0x10", "1e3", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ids, err := parseIDs(raw)
		if err != nil {
			requireValidation(t, err, "requestIds")
			return
		}
		if len(ids) == 0 || len(ids) > MaxRequestIDs {
			t.Fatalf("%q gave %d ids", raw, len(ids))
		}
		for _, id := range ids {
			if id <= 0 {
				t.Fatalf("%q gave id %d", raw, id)
			}
		}
	})
}

// FuzzParseTxQuery feeds outside query strings to the account transaction
// list's parameters: a query is either read within its bounds or refused
// with a 400 that names a parameter.
func FuzzParseTxQuery(f *testing.F) {
	for _, s := range []string{"", "type=8,6", "type=x", "limit=101", "limit=0", "startId=-1", "startId=5&limit=100",
		"type=,", "type=32768", "type=%00", "limit=1e2", "startId=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = &http.Request{Method: "GET", URL: &url.URL{Path: "/api/v1/user/account/txs", RawQuery: query}}
		q, err := parseTxQuery(c)
		if err != nil {
			requireValidation(t, err, "")
			return
		}
		if q.limit < 1 || q.limit > MaxLimit || q.start < 1 {
			t.Fatalf("%q read as %+v", query, q)
		}
		for _, typ := range q.types {
			if typ <= 0 {
				t.Fatalf("%q read type %d", query, typ)
			}
		}
	})
}

// requireValidation checks that err is a 400 with code 1001 whose message
// names the parameter (any of them when name is empty).
func requireValidation(t *testing.T, err error, name string) {
	t.Helper()
	var he *httpx.Error
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Code != topics.CodeValidation {
		t.Fatalf("error %v is not a validation error", err)
	}
	if name != "" && !strings.Contains(he.Message, name) {
		t.Fatalf("message %q does not name %s", he.Message, name)
	}
	if !strings.Contains(he.Message, "parameter") {
		t.Fatalf("message %q names no parameter", he.Message)
	}
}
