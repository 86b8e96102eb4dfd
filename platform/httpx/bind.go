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
			Fail(c, UnsupportedMedia("Content-Type must be application/json, got %s", ct))
			return
		}
		c.Next()
	}
}

// DecodeJSON reads the whole body into v. Its errors are 400 validation
// errors whose message names the offending field or byte offset.
func DecodeJSON(c *gin.Context, v any) error {
	body, err := ReadBody(c)
	if err != nil {
		return err
	}
	return DecodeJSONBytes(body, v)
}

// ReadBody reads the whole request body, into one buffer of the declared
// length when there is one. A body over the frame's cap is a 400 that
// says the limit.
func ReadBody(c *gin.Context) ([]byte, error) {
	body, err := readAll(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// readAll reads r to its end. A declared length saves the buffer's
// regrowth; the reading goes on past it, so a longer body still meets the
// cap.
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > 1<<20 {
		return io.ReadAll(r)
	}
	buf := make([]byte, length, length+1)
	if n, err := io.ReadFull(r, buf); err != nil {
		return buf[:n], err
	}
	rest, err := io.ReadAll(r)
	return append(buf, rest...), err
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
