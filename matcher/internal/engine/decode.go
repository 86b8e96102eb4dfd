package engine

import (
	"bytes"
	"strings"

	"blockspace.exchange/topics"
)

// Decoding an orders record is most of what a command costs when it goes
// through encoding/json. decodePlace reads the common record, an order.place
// of version 1 as ingress writes it, in one pass without reflection. It
// accepts only input it reads exactly as topics.Decode and
// topics.DecodeOrderPlace would, and declines everything else: other types,
// escapes and non-ASCII bytes in strings, duplicate or case-folded member
// names, nulls, numbers that are not plain integers. A declined record goes
// through the strict decoder, which either reads it or says what is wrong
// with it, so both paths give the same answer; a fuzz test holds them to
// that.

// ApplyRecord decodes an orders record value and applies it.
func (e *Engine) ApplyRecord(value []byte) ([]Output, error) {
	var h envelopeHead
	if cmd, ok := decodePlace(value, &h); ok {
		return e.applyPlaceCommand(h.id, h.time, cmd)
	}
	env, err := topics.Decode(value)
	if err != nil {
		return nil, err
	}
	return e.Apply(env)
}

// envelopeHead is what the fast path reads of the envelope.
type envelopeHead struct {
	typ     string
	version int64
	id      string
	time    int64
}

// scanner walks a JSON text; ok turns false at the first byte it declines.
type scanner struct {
	b  []byte
	i  int
	ok bool
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c after optional whitespace.
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() string {
	b := s.raw()
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// raw reads a string like str and returns its bytes, aliasing the input.
func (s *scanner) raw() []byte {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.ok = false
		return nil
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.b[start:j]
		}
		if c < ' ' || c > '~' || c == '\\' {
			break
		}
	}
	s.ok = false
	return nil
}

// int reads an integer in JSON's grammar (no fraction, no exponent) that
// fits an int64.
func (s *scanner) int() int64 {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if v > (1<<63)/10 {
			s.ok = false
			return 0
		}
		v = v*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	switch {
	case n == 0, n > 1 && s.b[start] == '0', v > 1<<63, v == 1<<63 && !neg:
		s.ok = false
		return 0
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			s.ok = false
			return 0
		}
	}
	if neg {
		return -int64(v)
	}
	return int64(v)
}

func (s *scanner) bool() bool {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false
	}
	s.ok = false
	return false
}

// object calls member for each member name of an object until either
// declines.
func (s *scanner) object(member func(name []byte) bool) {
	if !s.byte('{') {
		s.ok = false
		return
	}
	if s.byte('}') {
		return
	}
	for s.ok {
		name := s.raw()
		if !s.ok || !s.byte(':') || !member(name) {
			s.ok = false
			return
		}
		if s.byte('}') {
			return
		}
		if !s.byte(',') {
			s.ok = false
		}
	}
}

// decodePlace reads an order.place record of version 1. Members may come in
// any order; data is read once the envelope said what it holds.
func decodePlace(b []byte, h *envelopeHead) (topics.OrderPlace, bool) {
	s := scanner{b: b, ok: true}
	var seen uint8
	var dataAt = -1
	s.object(func(name []byte) bool {
		bit := envelopeMember(name)
		if bit == 0 || seen&bit != 0 {
			return false // an unknown member may be anything: leave it to the strict path
		}
		seen |= bit
		switch string(name) {
		case "type":
			if string(s.raw()) == topics.TypeOrderPlace {
				h.typ = topics.TypeOrderPlace
			}
		case "version":
			h.version = s.int()
		case "id":
			h.id = s.str()
		case "time":
			h.time = s.int()
		case "data":
			dataAt = s.i
			s.skipObject()
		}
		return s.ok
	})
	s.ws()
	if !s.ok || s.i != len(b) || seen != 1<<5-1 || h.typ != topics.TypeOrderPlace || h.version != topics.OrderCommandVersion ||
		h.id == "" || len(h.id) > topics.MaxIDLen || strings.IndexByte(h.id, ' ') >= 0 || h.time < 0 {
		return topics.OrderPlace{}, false
	}
	return decodePlaceData(b[dataAt:])
}

// envelopeMember returns the bit of a member the fast path reads, or 0.
func envelopeMember(name []byte) uint8 {
	switch string(name) {
	case "type":
		return 1
	case "version":
		return 2
	case "id":
		return 4
	case "time":
		return 8
	case "data":
		return 16
	}
	return 0
}

// skipObject passes over an object whose strings have no escapes and whose
// values are not nested; that is all an order.place holds. Its members are
// read again by decodePlaceData.
func (s *scanner) skipObject() {
	if !s.byte('{') {
		s.ok = false
		return
	}
	for depth := 1; s.ok && depth > 0; {
		s.ws()
		if s.i >= len(s.b) {
			s.ok = false
			return
		}
		switch c := s.b[s.i]; {
		case c == '}':
			depth--
			s.i++
		case c == '"':
			s.str()
		case c == '{', c == '[', c == '\\':
			s.ok = false
		default:
			s.i++
		}
	}
}

// placeMember returns the bit of an order.place member, or 0.
func placeMember(name []byte) uint16 {
	switch string(name) {
	case "orderId":
		return 1
	case "userId":
		return 2
	case "accountId":
		return 4
	case "instrumentId":
		return 8
	case "side":
		return 16
	case "orderType":
		return 32
	case "quantity":
		return 64
	case "price":
		return 128
	case "clientOrderId":
		return 256
	case "passive":
		return 512
	case "source":
		return 1024
	}
	return 0
}

func decodePlaceData(b []byte) (topics.OrderPlace, bool) {
	s := scanner{b: b, ok: true}
	var p topics.OrderPlace
	var seen uint16
	s.object(func(name []byte) bool {
		bit := placeMember(name)
		if bit == 0 || seen&bit != 0 {
			// encoding/json matches names without regard to case and
			// lets a repeated name win: leave both to it.
			return false
		}
		seen |= bit
		switch string(name) {
		case "orderId":
			p.OrderID = s.int()
		case "userId":
			p.UserID = s.int()
		case "accountId":
			p.AccountID = s.int()
		case "instrumentId":
			p.InstrumentID = s.str()
		case "side":
			p.Side = s.bool()
		case "orderType":
			p.OrderType = int(s.int())
		case "quantity":
			p.Quantity = s.str()
		case "price":
			p.Price = s.str()
		case "clientOrderId":
			p.ClientOrderID = s.str()
		case "passive":
			p.Passive = s.bool()
		case "source":
			p.Source = int(s.int())
		}
		return s.ok
	})
	return p, s.ok
}
