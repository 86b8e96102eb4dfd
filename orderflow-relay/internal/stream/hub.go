// Package stream fans decoded originator transactions out to searcher
// WebSockets. Each relay instance reads the orderflow topics from where
// they ended when it started (missed notifications are not replayed) and
// serves its own sockets; any number of instances can run side by side.
package stream

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"sync/atomic"
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

// TextFrame returns payload as one complete, final WebSocket text frame
// as a server sends it (RFC 6455 section 5.2: no mask, the length in 7,
// 16 or 64 bits).
func TextFrame(payload []byte) []byte {
	n := len(payload)
	var out []byte
	switch {
	case n <= 125:
		out = append(make([]byte, 0, 2+n), 0x81, byte(n))
	case n <= 0xFFFF:
		out = append(make([]byte, 0, 4+n), 0x81, 126, byte(n>>8), byte(n))
	default:
		out = append(make([]byte, 0, 10+n), 0x81, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

// Broadcast queues result (the JSON array of decoded transactions of one
// submission) on every socket. The notification is encoded and framed
// once; every socket's writer sends the same bytes.
func (h *Hub) Broadcast(result []byte) {
	sockets := h.list()
	if len(sockets) == 0 {
		return
	}
	frame := TextFrame(Notification(h.subID, result))
	for _, s := range sockets {
		select {
		case s.queue <- frame:
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

// closeRevoked disconnects every socket whose key was checked and is not
// live. A socket opened while the check ran was not checked: its key was
// live when it opened, and the next check covers it.
func (h *Hub) closeRevoked(checked []string, live map[string]bool) int {
	was := make(map[string]bool, len(checked))
	for _, k := range checked {
		was[k] = true
	}
	n := 0
	for _, s := range h.list() {
		if was[s.who.KeyHash] && !live[s.who.KeyHash] {
			s.revoked()
			n++
		}
	}
	return n
}
