package stream

import (
	"fmt"
	"net/http"
	"sync"

	"blockspace.exchange/platform/jsonrpc"
)

// slots counts the open sockets of each API key and of the whole relay.
// Every socket costs two goroutines, its buffers and a queue of
// QueueLen messages, so both counts are bounded: a place is taken before
// the upgrade and given back when the socket has left the hub, and a
// socket over either limit is refused with HTTP 429 before it costs
// anything.
type slots struct {
	perKey, max int

	mu    sync.Mutex // guards total and byKey
	total int
	byKey map[string]int // key hash → open sockets; keys with none are deleted
}

func newSlots(perKey, max int) *slots {
	return &slots{perKey: perKey, max: max, byKey: make(map[string]int)}
}

// take reserves a place for a socket of keyHash. When a limit is reached
// it reserves nothing and returns the refusal's message.
func (l *slots) take(keyHash string) (refusal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byKey[keyHash] >= l.perKey:
		return fmt.Sprintf("socket limit per API key reached: this key has %d open sockets, close one first", l.perKey)
	case l.total >= l.max:
		return fmt.Sprintf("socket limit of this relay reached: %d open sockets, retry later", l.max)
	}
	l.byKey[keyHash]++
	l.total++
	return ""
}

// give returns the place take reserved for keyHash.
func (l *slots) give(keyHash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey[keyHash]--; l.byKey[keyHash] <= 0 {
		delete(l.byKey, keyHash)
	}
	l.total--
}

// refuseRetryAfter is the Retry-After of a refused socket, in seconds: a
// place frees as soon as any socket closes.
const refuseRetryAfter = "1"

// refuse answers an upgrade over a socket limit: 429 with Retry-After
// and the JSON-RPC error -32000 naming the limit.
func refuse(w http.ResponseWriter, refusal string) {
	w.Header().Set("Retry-After", refuseRetryAfter)
	fail(w, http.StatusTooManyRequests, jsonrpc.Errorf(jsonrpc.CodeRule, "%s", refusal))
}

// fail answers a request refused before the upgrade with HTTP status and
// the JSON-RPC error e (id null: no request was read).
func fail(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.EncodeError(nil, e))
}
