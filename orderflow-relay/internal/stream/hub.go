// Package stream fans decoded originator transactions out to searcher
// WebSockets. Each relay instance reads the orderflow topics from where
// they ended when it started (missed notifications are not replayed) and
// serves its own sockets; any number of instances can run side by side.
package stream

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"
)

// Hub holds the open sockets. Broadcast encodes a notification once and
// never blocks: each socket has a bounded queue that its own writer
// goroutine drains, and a socket whose queue is full is disconnected, so a
// slow reader never slows the others.
type Hub struct {
	// subID is the id of the stream's subscription. Every socket of the
	// hub shares it, so a notification is the same bytes for all of them.
	subID string

	mu sync.Mutex // serializes add and remove
	// sockets is replaced, never changed, under mu (copy on write), so
	// Broadcast reads it without a lock.
	sockets atomic.Pointer[[]*socket]

	delivered, dropped atomic.Uint64
}

// NewHub returns an empty hub with a fresh subscription id.
func NewHub() *Hub {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := &Hub{subID: "0x" + hex.EncodeToString(b[:])}
	h.sockets.Store(&[]*socket{})
	return h
}

// SubscriptionID is the id of the stream's subscription on every socket.
func (h *Hub) SubscriptionID() string { return h.subID }

func (h *Hub) add(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.sockets.Load()
	next := make([]*socket, len(old), len(old)+1)
	copy(next, old)
	next = append(next, s)
	h.sockets.Store(&next)
}

func (h *Hub) remove(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.sockets.Load()
	next := make([]*socket, 0, len(old))
	for _, o := range old {
		if o != s {
			next = append(next, o)
		}
	}
	h.sockets.Store(&next)
}

func (h *Hub) list() []*socket { return *h.sockets.Load() }

// Len is the number of open sockets.
func (h *Hub) Len() int { return len(h.list()) }

// Stats returns how many notifications were queued on sockets and how
// many found a full queue (and closed that socket).
func (h *Hub) Stats() (delivered, dropped uint64) { return h.delivered.Load(), h.dropped.Load() }

var (
	notePrefix = []byte(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"`)
	noteMiddle = []byte(`","result":`)
	noteSuffix = []byte(`}}`)
)

// Notification returns the eth_subscription message carrying result.
func Notification(subID string, result []byte) []byte {
	out := make([]byte, 0, len(notePrefix)+len(subID)+len(noteMiddle)+len(result)+len(noteSuffix))
	out = append(append(append(out, notePrefix...), subID...), noteMiddle...)
	return append(append(out, result...), noteSuffix...)
}

// Broadcast queues result (the JSON array of decoded transactions of one
// submission) on every socket. The notification is encoded and framed
// once; every socket's writer sends the same prepared bytes.
func (h *Hub) Broadcast(result []byte) {
	sockets := h.list()
	if len(sockets) == 0 {
		return
	}
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, Notification(h.subID, result))
	if err != nil {
		return // only compression can fail, and it is off
	}
	for _, s := range sockets {
		select {
		case s.queue <- pm:
			h.delivered.Add(1)
		default:
			h.dropped.Add(1)
			s.overflow() // closes the socket; its goroutines remove it
		}
	}
}

// keyHashes returns the distinct key hashes of the open sockets.
func (h *Hub) keyHashes() []string {
	seen := make(map[string]bool)
	var out []string
	for _, s := range h.list() {
		if !seen[s.who.KeyHash] {
			seen[s.who.KeyHash] = true
			out = append(out, s.who.KeyHash)
		}
	}
	return out
}

// closeRevoked disconnects every socket whose key is not live.
func (h *Hub) closeRevoked(live map[string]bool) int {
	n := 0
	for _, s := range h.list() {
		if !live[s.who.KeyHash] {
			s.revoked()
			n++
		}
	}
	return n
}
