package topics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrInvalidEnvelope marks a record value that is not a valid envelope.
// Consumers branch on it to park a poisoned record instead of retrying it.
var ErrInvalidEnvelope = errors.New("invalid envelope")

// Limits of the envelope's identifying fields. They keep ids usable as
// database keys and log fields.
const (
	MaxTypeLen = 64
	MaxIDLen   = 128
)

// Envelope is the value of every record: a typed, versioned, identified
// payload. On the wire it is the JSON object
//
//	{"type":"order.place","version":1,"id":"...","time":1700000000000,"data":{...}}
//
// so any Kafka client or analytics tool can read it without this package.
type Envelope struct {
	// Type is the message type, one of the Type constants.
	Type string
	// Version is the payload's schema version, starting at 1. Readers
	// reject versions they do not know rather than guess.
	Version int
	// ID is unique per message. For commands it is the command id that
	// consumers use to drop duplicates; for derived events it is
	// deterministic so that a replay produces the same id.
	ID string
	// Time is UNIX milliseconds: when ingress accepted a command, or the
	// scheduled instant of a clock tick. Consumers never use their own clock.
	Time int64
	// Data is the payload, a JSON object.
	Data json.RawMessage
}

// NewEnvelope marshals payload as the data of a new envelope.
func NewEnvelope(typ string, version int, id string, at time.Time, payload any) (Envelope, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, fmt.Errorf("new envelope %s: marshal data: %w", typ, err)
	}
	e := Envelope{Type: typ, Version: version, ID: id, Time: at.UnixMilli(), Data: data}
	if err := e.Validate(); err != nil {
		return Envelope{}, fmt.Errorf("new envelope: %w", err)
	}
	return e, nil
}

// At returns Time as a time.Time.
func (e Envelope) At() time.Time { return time.UnixMilli(e.Time) }

// Validate reports the first field that breaks the envelope's rules.
func (e Envelope) Validate() error {
	if err := e.validateHead(); err != nil {
		return err
	}
	return validateData(e.Data)
}

// validateHead checks every field but Data.
func (e Envelope) validateHead() error {
	if err := validateType(e.Type); err != nil {
		return err
	}
	if e.Version < 1 {
		return fmt.Errorf("%w: version %d is below 1", ErrInvalidEnvelope, e.Version)
	}
	if err := validateID(e.ID); err != nil {
		return err
	}
	if e.Time < 0 {
		return fmt.Errorf("%w: time %d is negative", ErrInvalidEnvelope, e.Time)
	}
	return nil
}

// validateType accepts lower-case dotted names such as "order.cancel_batch".
func validateType(t string) error {
	if t == "" {
		return fmt.Errorf("%w: missing type", ErrInvalidEnvelope)
	}
	if len(t) > MaxTypeLen {
		return fmt.Errorf("%w: type is longer than %d bytes", ErrInvalidEnvelope, MaxTypeLen)
	}
	dots := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z':
		case (c >= '0' && c <= '9' || c == '_') && i > 0 && t[i-1] != '.':
		case c == '.' && i > 0 && i < len(t)-1 && t[i-1] != '.':
			dots++
		default:
			return fmt.Errorf("%w: type %q is not of the form noun.verb in lower case", ErrInvalidEnvelope, t)
		}
	}
	if dots == 0 {
		return fmt.Errorf("%w: type %q has no dot", ErrInvalidEnvelope, t)
	}
	return nil
}

// validateID accepts printable ASCII without spaces, so ids survive logs,
// headers and database columns unchanged.
func validateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: missing id", ErrInvalidEnvelope)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: id is longer than %d bytes", ErrInvalidEnvelope, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("%w: id %q has a byte outside printable ASCII at %d", ErrInvalidEnvelope, id, i)
		}
	}
	return nil
}

func validateData(data json.RawMessage) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return fmt.Errorf("%w: missing data", ErrInvalidEnvelope)
	}
	if isCompactObject(trimmed) {
		return nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return fmt.Errorf("%w: data is not a JSON object", ErrInvalidEnvelope)
	}
	return nil
}

// Encode validates e and returns its JSON encoding. HTML characters are not
// escaped, so the bytes read the same in kcat as in Go. Data is compacted,
// which also checks that it is valid JSON.
func Encode(e Envelope) ([]byte, error) {
	if err := e.validateHead(); err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	trimmed := bytes.TrimLeft(e.Data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("encode envelope: %w: missing data", ErrInvalidEnvelope)
	}
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("encode envelope: %w: data is not a JSON object", ErrInvalidEnvelope)
	}
	head := AppendEnvelopeHead(make([]byte, 0, len(e.Data)+len(e.Type)+len(e.ID)+64), e.Type, e.Version, e.ID, e.Time)
	if isCompactObject(trimmed) {
		// Already compact, as json.Marshal and the appending encoders
		// write it: Compact would copy it unchanged.
		return append(append(head, trimmed...), '}'), nil
	}
	return encodeData(head, trimmed)
}

// encodeData appends data compacted by encoding/json and the closing '}'
// to head, for data in any form.
func encodeData(head, data []byte) ([]byte, error) {
	buf := bytes.NewBuffer(head)
	if err := json.Compact(buf, data); err != nil {
		return nil, fmt.Errorf("encode envelope: %w: data is not a JSON object", ErrInvalidEnvelope)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// AppendEnvelopeHead appends the encoding of an envelope up to its data:
// `{"type":...,"version":...,"id":...,"time":...,"data":`. The caller then
// appends the data object and a closing '}'. It is for producers that
// encode a payload they built themselves (e.g. with OrderEvent.AppendJSON)
// with a type and an id that obey Validate's rules: it checks nothing, and
// the result is byte for byte what Encode returns for the same envelope.
func AppendEnvelopeHead(dst []byte, typ string, version int, id string, time int64) []byte {
	dst = appendJSONString(append(dst, `{"type":`...), typ, false)
	dst = strconv.AppendInt(append(dst, `,"version":`...), int64(version), 10)
	dst = appendJSONString(append(dst, `,"id":`...), id, false)
	dst = strconv.AppendInt(append(dst, `,"time":`...), time, 10)
	return append(dst, `,"data":`...)
}

// UnmarshalData decodes the payload into v, a pointer to a zero value.
// Unknown payload fields are ignored: producers add fields without
// breaking older readers. A payload type with a generated reader (marked
// //topics:readjson) is read by it when the payload is in the plain form
// producers write, and by encoding/json otherwise.
func (e Envelope) UnmarshalData(v any) error {
	if r, ok := v.(interface{ ReadJSON([]byte) bool }); ok && r.ReadJSON(e.Data) {
		return nil
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s data: %w", e.Type, err)
	}
	return nil
}

// Header is a record header, kept free of any Kafka client's type.
type Header struct {
	Key   string
	Value []byte
}

// Record header keys. They repeat the envelope's type and version so that a
// consumer can skip records without decoding their values.
const (
	HeaderType    = "type"
	HeaderVersion = "version"
)

// Headers returns the record headers that go with e.
func (e Envelope) Headers() []Header {
	return []Header{
		{Key: HeaderType, Value: []byte(e.Type)},
		{Key: HeaderVersion, Value: []byte(strconv.Itoa(e.Version))},
	}
}
