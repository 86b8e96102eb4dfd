package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/gin-gonic/gin"
)

// RequireJSON refuses a request whose body is not declared as JSON with
// 415, before any handler reads it.
func RequireJSON() gin.HandlerFunc {
	return func(c *gin.Context) {
		ct := c.GetHeader("Content-Type")
		media, _, err := mime.ParseMediaType(ct)
		if err != nil || media != "application/json" {
			if ct == "" {
				ct = "none"
			}
			Fail(c, &Error{Status: http.StatusUnsupportedMediaType, Code: CodeValidation, Key: "error.unsupportedMediaType",
				Message: "Content-Type must be application/json, got " + ct})
			return
		}
		c.Next()
	}
}

// DecodeJSON reads the whole body into v. Its errors are 400 validation
// errors whose message names the offending field or byte offset.
func DecodeJSON(c *gin.Context, v any) error {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return fmt.Errorf("read body: %w", err)
	}
	return DecodeJSONBytes(body, v)
}

// DecodeJSONBytes is DecodeJSON for a body already read.
func DecodeJSONBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Invalid("request body is empty; a JSON document is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return Invalid("%s", describeJSONError(err))
	}
	// dec.More is false before a stray ']' or '}', so look at the rest.
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return Invalid("request body holds data after the JSON document")
	}
	return nil
}

func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %s must be %s, got JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("body must be %s, got JSON %s", typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of body"
	default:
		return "malformed JSON: " + err.Error()
	}
}
