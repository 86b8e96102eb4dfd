// Package stream fans decoded originator transactions out to searcher
// WebSockets. Each relay instance reads the orderflow topics from their
// end (missed notifications are not replayed) and serves its own sockets;
// any number of instances can run side by side.
package stream

import (
	"sync"
	"sync/atomic"
)

// Hub holds the open sockets. Broadcast never blocks: each socket has a
// bounded queue, and a socket whose queue is full is disconnected, so a
// slow reader never slows the others.
type Hub struct {
	mu      sync.RWMutex // guards sockets
	sockets map[*socket]struct{}

	delivered, dropped atomic.Uint64
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{sockets: make(map[*socket]struct{})} }

func (h *Hub) add(s *socket) {
	h.mu.Lock()
	h.sockets[s] = struct{}{}
	h.mu.Unlock()
}

func (h *Hub) remove(s *socket) {
	h.mu.Lock()
	delete(h.sockets, s)
	h.mu.Unlock()
}

// Len is the number of open sockets.
func (h *Hub) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.sockets)
}

// Broadcast queues result (the JSON array of decoded transactions of one
// submission) on every socket.
func (h *Hub) Broadcast(result []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.sockets {
		select {
		case s.queue <- result:
			h.delivered.Add(1)
		default:
			h.dropped.Add(1)
			s.overflow() // closes the socket; its goroutines remove it
		}
	}
}

// keyHashes returns the distinct key hashes of the open sockets.
func (h *Hub) keyHashes() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := make(map[string]bool)
	var out []string
	for s := range h.sockets {
		if !seen[s.who.KeyHash] {
			seen[s.who.KeyHash] = true
			out = append(out, s.who.KeyHash)
		}
	}
	return out
}

// closeRevoked disconnects every socket whose key is not live.
func (h *Hub) closeRevoked(live map[string]bool) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for s := range h.sockets {
		if !live[s.who.KeyHash] {
			s.revoked()
			n++
		}
	}
	return n
}
