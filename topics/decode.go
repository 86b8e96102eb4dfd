package topics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode parses and validates an envelope. It is strict where a mistake
// would be silent: every field must be present with its exact lower-case
// name and right JSON type, no field may repeat, and nothing may follow the
// object. Unknown fields are ignored so that a later envelope field does not
// break older readers. Data is returned compacted, so decoding the encoding
// of a decoded envelope gives the same envelope. Data may share b's array
// (the common compact envelope is read in place), so b must not be written
// while the envelope is in use.
func Decode(b []byte) (Envelope, error) {
	if e, ok := decodeCompact(b); ok {
		return e, nil
	}
	return decodeStrict(b)
}

// decodeStrict is Decode through encoding/json, for any input.
func decodeStrict(b []byte) (Envelope, error) {
	fields, err := objectFields(b)
	if err != nil {
		return Envelope{}, fmt.Errorf("decode envelope: %w: %w", ErrInvalidEnvelope, err)
	}
	e, err := envelopeFromFields(fields)
	if err != nil {
		return Envelope{}, fmt.Errorf("decode envelope: %w", err)
	}
	if err := e.Validate(); err != nil {
		return Envelope{}, fmt.Errorf("decode envelope: %w", err)
	}
	return e, nil
}

// objectFields splits one JSON object into its raw member values, refusing
// duplicate names: two "type" members would let two readers disagree.
func objectFields(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read member name: %w", err)
		}
		name, _ := tok.(string)
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("read member %q: %w", name, err)
		}
		fields[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read object end: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return fields, nil
}

func envelopeFromFields(fields map[string]json.RawMessage) (Envelope, error) {
	var e Envelope
	if err := member(fields, "type", &e.Type); err != nil {
		return Envelope{}, err
	}
	if err := member(fields, "version", &e.Version); err != nil {
		return Envelope{}, err
	}
	if err := member(fields, "id", &e.ID); err != nil {
		return Envelope{}, err
	}
	if err := member(fields, "time", &e.Time); err != nil {
		return Envelope{}, err
	}
	data, ok := fields["data"]
	if !ok {
		return Envelope{}, fmt.Errorf("%w: missing data", ErrInvalidEnvelope)
	}
	if err := validateData(data); err != nil {
		return Envelope{}, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return Envelope{}, fmt.Errorf("%w: data: %w", ErrInvalidEnvelope, err)
	}
	e.Data = compact.Bytes()
	return e, nil
}

// member decodes one required member. A JSON null is treated as missing,
// because encoding/json would otherwise leave the zero value in place.
func member(fields map[string]json.RawMessage, name string, v any) error {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return fmt.Errorf("%w: missing %s", ErrInvalidEnvelope, name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidEnvelope, name, err)
	}
	return nil
}

// HasNUL reports whether a string of the JSON value b holds a NUL
// character, written as the escape \u0000 (JSON has no other way to write
// one). Postgres text and jsonb refuse NUL: a consumer that stores the
// strings of a record refuses such a record, or every retry of its batch
// fails on it and the partition waits for good.
func HasNUL(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u0000`))
		if j < 0 {
			return false
		}
		j += i
		slashes := 0
		for k := j - 1; k >= 0 && b[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 0 { // the backslash of \u0000 is not itself escaped
			return true
		}
		i = j + 1
	}
}
