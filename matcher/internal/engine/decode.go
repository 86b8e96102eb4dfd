package engine

import "blockspace.exchange/topics"

// Decoding an orders record is most of what a command costs when it goes
// through encoding/json. decodePlaceData reads the payload of the common
// record, an order.place of version 1 as ingress writes it, in one pass
// without reflection (topics.Decode reads its envelope the same way), with
// topics.OrderPlace's ReadJSON. It accepts only input it reads exactly as
// topics.DecodeOrderPlace would, and declines everything else: escapes and
// non-ASCII bytes in strings, duplicate or case-folded member names,
// nulls, numbers that are not plain integers. A declined payload goes
// through the strict decoder, which either reads it or says what is wrong
// with it, so both paths give the same answer; a fuzz test holds them to
// that.

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

// decodePlaceData reads an order.place payload with the reader generated
// from topics.OrderPlace's declaration.
func decodePlaceData(b []byte) (topics.OrderPlace, bool) {
	var p topics.OrderPlace
	ok := p.ReadJSON(b)
	return p, ok
}
