package engine

import (
	"bytes"

	"blockspace.exchange/topics"
)

// Decoding an orders record is most of what a command costs when it goes
// through encoding/json. decodePlaceData reads the payload of the common
// record, an order.place of version 1 as ingress writes it, in one pass
// without reflection (topics.Decode reads its envelope the same way). It
// accepts only input it reads exactly as topics.DecodeOrderPlace would,
// and declines everything else: escapes and non-ASCII bytes in strings,
// duplicate or case-folded member names, nulls, numbers that are not plain
// integers. A declined payload goes through the strict decoder, which
// either reads it or says what is wrong with it, so both paths give the
// same answer; a fuzz test holds them to that.

// ApplyRecord decodes an orders record value and applies it. The
// envelope is read by topics.Decode (one pass for the compact envelopes
// ingress writes); an order.place payload by decodePlaceData, which
// declines what it does not read exactly as topics.DecodeOrderPlace would.
func (e *Engine) ApplyRecord(value []byte) ([]Output, error) {
	env, err := topics.Decode(value)
	if err != nil {
		return nil, err
	}
	if env.Type == topics.TypeOrderPlace && env.Version == topics.OrderCommandVersion {
		if cmd, ok := decodePlaceData(env.Data); ok {
			return e.applyPlaceCommand(env.ID, env.Time, cmd)
		}
	}
	return e.Apply(env)
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
