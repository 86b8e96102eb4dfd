package topics

import "strconv"

// Every service writes envelopes as Encode does: compact JSON, the five
// members in order, identifiers in plain ASCII. decodeCompact reads exactly
// that shape in one pass without reflection or copies; Data aliases b. It
// declines (ok false) everything else: whitespace outside strings, escapes
// in member names, type or id, unknown or repeated members, nulls, numbers
// that are not plain integers, nesting deeper than maxCompactDepth, and any
// envelope whose head Validate refuses. Decode then takes the strict path,
// which reads the input or says what is wrong with it, so the answer never
// depends on the path; a fuzz test holds the two to that.
func decodeCompact(b []byte) (e Envelope, ok bool) {
	const (
		haveType = 1 << iota
		haveVersion
		haveID
		haveTime
		haveData
		haveAll = haveType | haveVersion | haveID | haveTime | haveData
	)
	if len(b) < 2 || b[0] != '{' {
		return Envelope{}, false
	}
	var have uint8
	i := 1
	for {
		name, j := plainString(b, i)
		if j < 0 || j >= len(b) || b[j] != ':' {
			return Envelope{}, false
		}
		i = j + 1
		var bit uint8
		switch string(name) {
		case "type":
			bit = haveType
			var s []byte
			s, j = plainString(b, i)
			e.Type = string(s)
		case "id":
			bit = haveID
			var s []byte
			s, j = plainString(b, i)
			e.ID = string(s)
		case "version":
			bit = haveVersion
			var v int64
			v, j = plainInt(b, i)
			e.Version = int(v)
		case "time":
			bit = haveTime
			e.Time, j = plainInt(b, i)
		case "data":
			bit = haveData
			if i < len(b) && b[i] == '{' {
				j = skipValue(b, i, 0)
				if j > 0 {
					e.Data = b[i:j:j]
				}
			} else {
				j = -1
			}
		default:
			return Envelope{}, false
		}
		if j < 0 || j >= len(b) || have&bit != 0 {
			return Envelope{}, false
		}
		have |= bit
		i = j + 1
		switch b[j] {
		case ',':
			continue
		case '}':
		default:
			return Envelope{}, false
		}
		break
	}
	if i != len(b) || have != haveAll || e.validateHead() != nil {
		return Envelope{}, false
	}
	return e, true
}

// isCompactObject reports whether b is exactly one JSON object in compact
// form that skipValue reads (encoding/json's Compact would return it
// unchanged, and json.Valid accepts it).
func isCompactObject(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && skipValue(b, 0, 0) == len(b)
}

// maxCompactDepth bounds the nesting decodeCompact reads itself.
const maxCompactDepth = 32

// plainString reads the string at b[i] when it has only printable ASCII
// and no escapes, and returns its contents and the index after it; -1
// when it declines.
func plainString(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1
		case c < ' ' || c > '~' || c == '\\':
			return nil, -1
		}
	}
	return nil, -1
}

// plainInt reads the integer at b[i] in JSON's grammar (no fraction, no
// exponent) when it fits an int64, and returns it and the index after it;
// -1 when it declines.
func plainInt(b []byte, i int) (int64, int) {
	j := skipNumber(b, i)
	if j < 0 {
		return 0, -1
	}
	v, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	if err != nil {
		return 0, -1
	}
	return v, j
}

// skipValue returns the index after the compact JSON value at b[i], or -1
// when it is not one: invalid JSON, whitespace outside strings, or nesting
// deeper than maxCompactDepth. Strings are checked as encoding/json checks
// them (no control bytes, valid escapes; other bytes pass).
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '{':
		return skipComposite(b, i, depth, '}', true)
	case '[':
		return skipComposite(b, i, depth, ']', false)
	case '"':
		return skipString(b, i)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	default:
		return skipNumber(b, i)
	}
}

// skipComposite skips an object (members true) or an array opened at b[i].
func skipComposite(b []byte, i, depth int, end byte, members bool) int {
	if depth >= maxCompactDepth {
		return -1
	}
	i++
	if i < len(b) && b[i] == end {
		return i + 1
	}
	for {
		if members {
			i = skipString(b, i)
			if i < 0 || i >= len(b) || b[i] != ':' {
				return -1
			}
			i++
		}
		i = skipValue(b, i, depth+1)
		if i < 0 || i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i++
		case end:
			return i + 1
		default:
			return -1
		}
	}
}

func skipString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < ' ':
			return -1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipNumber skips -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = skipDigits(b, i+1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = skipDigits(b, i); i < 0 {
			return -1
		}
	}
	return i
}

// skipDigits skips one or more digits; -1 when there is none.
func skipDigits(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
