package live

import (
	"encoding/json"
)

// push is a channel message: e channel, E event time (ms), s instrument,
// a action, P payload.
type push struct {
	Channel    string `json:"e"`
	Time       int64  `json:"E"`
	Instrument string `json:"s,omitempty"`
	Action     string `json:"a"`
	Payload    any    `json:"P"`
}

// reply is an acknowledgement or error event.
type reply struct {
	Event     string `json:"event"`
	Code      int    `json:"code"`
	Msg       string `json:"msg,omitempty"`
	Op        string `json:"op,omitempty"`
	Arg       *Arg   `json:"arg,omitempty"`
	UserID    int64  `json:"userId,omitempty"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
}

// answer is the result of a query: q the query type, s the instrument,
// P the payload.
type answer struct {
	Query      string `json:"q"`
	Instrument string `json:"s,omitempty"`
	Payload    any    `json:"P"`
}

// Actions of pushes beyond the model's market and order actions.
const (
	actionSnapshot = "snapshot"
	actionUpdate   = "update"
	actionTrade    = "trade"
)

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every message is built from plain structs; a failure is a bug.
		panic("live: encode message: " + err.Error())
	}
	return b
}

func ack(event string, a Arg) []byte {
	return encode(reply{Event: event, Code: CodeOK, Arg: &a})
}

func errorReply(e *protoError) []byte {
	return encode(reply{Event: "error", Code: e.code, Msg: e.msg, Op: e.op, Arg: e.arg})
}
