package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"testing"
)

// membersReference is the straightforward json.Decoder walk that members
// replaces; the fuzz test holds the two to the same answers.
func membersReference(body []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, errNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, errors.New("request is not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		fields[name] = raw
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, err
	}
	return fields, nil
}

func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":["0x00"]}`,
		` { "a" : [ {"b":"}]\"" } , 1 ] , "c":true,"d" :null,"e":-1.5e3 } `,
		`{"a\u0041":1,"aA":2}`, `{"a":1,"a":2}`, `{}`, `[]`, `"x"`, `{"a":{"b":{"c":[[["]"]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := members(body)
		want, wantErr := membersReference(body)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("members %v, reference %v", gotErr, wantErr)
		}
		if gotErr == nil && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("members %q, reference %q", got, want)
		}
	})
}

func FuzzSingleElement(f *testing.F) {
	for _, s := range []string{`[1]`, `[ "a" ]`, `[]`, `[1,2]`, `[[1,2]]`, `{"a":1}`, `[{"x":"]"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		got, ok := singleElement(raw)
		var want []json.RawMessage
		refOK := json.Unmarshal(raw, &want) == nil && len(want) == 1
		if ok != refOK || (ok && !bytes.Equal(got, want[0])) {
			t.Fatalf("%q: got %q %v, reference %q %v", raw, got, ok, want, refOK)
		}
	})
}
