// Package jsonrpc is the JSON-RPC 2.0 frame of the private-orderflow
// endpoints: strict request decoding, the error codes of docs/codes.md, the
// response encoding, and an HTTP handler with the same habits as the REST
// frame (request ids, metrics, a bound on concurrent requests and on body
// size). The WebSocket servers use Parse and the response encoders alone.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Error codes (docs/codes.md "JSON-RPC codes (private orderflow)").
const (
	CodeParse          = -32700 // body is not JSON
	CodeInvalidRequest = -32600 // not a valid request object; also body too large and a bad transaction
	CodeMethodNotFound = -32601 // unknown method, also eth_unsubscribe
	CodeInvalidParams  = -32602 // params not as the method needs
	CodeInternal       = -32603 // server failure
	CodeRule           = -32000 // a rule of the service was broken; the message says which
)

// Error is a JSON-RPC error object. It is also a Go error, so handlers
// return it like any other.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// HTTPStatus is the status an HTTP endpoint answers with; 0 is 200.
	HTTPStatus int `json:"-"`
	// RetryAfter, when above zero, is sent as the Retry-After header (in
	// whole seconds, at least 1) of an HTTP answer: how long a limited
	// client waits before it tries again.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("json-rpc %d: %s", e.Code, e.Message) }

// Errorf returns an Error with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as a JSON-RPC error: itself when it is one, else an
// internal error with a generic message (the cause is for the log only).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error"}
}

// Request is one decoded JSON-RPC request whose params is a one-element
// array, as every orderflow method takes.
type Request struct {
	// ID is the request id as sent: a JSON string or integer.
	ID json.RawMessage
	// Method is the method name.
	Method string
	// Param is the single element of params.
	Param json.RawMessage
}

// nullID is the id of a response to a request whose id could not be read.
var nullID = json.RawMessage("null")

// Parse decodes one request strictly: a single JSON object (no batch)
// with exactly the members jsonrpc ("2.0"), id (a non-null string or an
// integer), method (a non-empty string) and params (an array of one
// element), each once, and nothing after the object. On failure the
// returned id is the request's id when it could be read, else null.
func Parse(body []byte) (Request, json.RawMessage, *Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return Request{}, nullID, Errorf(CodeParse, "parse error: body is not valid JSON")
		}
		return Request{}, nullID, Errorf(CodeInvalidRequest, "batch requests are not supported; send one request object")
	}
	fields, err := members(body)
	if err != nil {
		if errors.Is(err, errNotJSON) {
			return Request{}, nullID, Errorf(CodeParse, "parse error: %v", err)
		}
		return Request{}, nullID, Errorf(CodeInvalidRequest, "invalid request: %v", err)
	}
	id := nullID
	if raw, ok := fields["id"]; ok && validID(raw) {
		id = raw
	}
	req, rerr := fromMembers(fields)
	if rerr != nil {
		return Request{}, id, rerr
	}
	return req, id, nil
}

var errNotJSON = errors.New("body is not valid JSON")

// members splits the request object into its members, refusing repeats.
// body is checked with json.Valid first; on valid JSON a single pass over
// the bytes finds each member's name and raw value (scan.go), without the
// allocations of a json.Decoder walk.
func members(body []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, errNotJSON
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return nil, errors.New("request is not a JSON object")
	}
	fields := make(map[string]json.RawMessage, 4)
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return fields, nil
	}
	for {
		end := skipValue(body, i) // the member name, a string
		name, err := memberName(body[i:end])
		if err != nil {
			return nil, err
		}
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past ':'
		end = skipValue(body, i)
		fields[name] = json.RawMessage(body[i:end])
		i = skipSpace(body, end)
		if body[i] == '}' {
			return fields, nil
		}
		i = skipSpace(body, i+1) // past ','
	}
}

// memberName decodes a member name; plain ASCII names without escapes
// are used as they are, others decode as encoding/json decodes them
// (invalid UTF-8 becomes U+FFFD).
func memberName(raw []byte) (string, error) {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(raw[1 : len(raw)-1]), nil
	}
	var name string
	err := json.Unmarshal(raw, &name)
	return name, err
}

func fromMembers(fields map[string]json.RawMessage) (Request, *Error) {
	for name := range fields {
		switch name {
		case "jsonrpc", "id", "method", "params":
		default:
			return Request{}, Errorf(CodeInvalidRequest, "invalid request: unknown member %q", name)
		}
	}
	if v, ok := fields["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return Request{}, Errorf(CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	id, ok := fields["id"]
	if !ok || !validID(id) {
		return Request{}, Errorf(CodeInvalidRequest, "invalid request: id must be a non-null string or an integer")
	}
	var method string
	if err := json.Unmarshal(fields["method"], &method); err != nil || method == "" {
		return Request{}, Errorf(CodeInvalidRequest, "invalid request: method must be a non-empty string")
	}
	param, ok := singleElement(fields["params"])
	if !ok {
		return Request{}, Errorf(CodeInvalidParams, "invalid params: params must be an array of one element")
	}
	return Request{ID: id, Method: method, Param: param}, nil
}

// validID accepts a JSON string or a JSON integer that fits an int64.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// response fixes the member order of an encoded response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// resultResponse keeps a null result (eth_cancelBundle) on the wire: a
// response must carry result or error.
type resultResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

// EncodeResult returns the response carrying result.
func EncodeResult(id json.RawMessage, result any) ([]byte, error) {
	if len(id) == 0 {
		id = nullID
	}
	return marshal(resultResponse{JSONRPC: "2.0", ID: id, Result: result})
}

// EncodeError returns the response carrying e.
func EncodeError(id json.RawMessage, e *Error) []byte {
	if len(id) == 0 {
		id = nullID
	}
	b, err := marshal(response{JSONRPC: "2.0", ID: id, Error: e})
	if err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return b
}

// Notification is a server-to-client message without id (eth_subscription).
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// readLimited reads at most limit bytes; tooLarge is true when more came.
func readLimited(r io.Reader, limit int64) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return nil, true, nil
	}
	return body, false, nil
}
