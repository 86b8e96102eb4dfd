// Package stream fans decoded originator transactions out to searcher
// WebSockets. Each relay instance reads the orderflow topics from where
// they ended when it started (missed notifications are not replayed) and
// serves its own sockets; any number of instances can run side by side.
package stream

import (
	"crypto/rand"
	"encoding/hex"
	"runtime"
	"sync"
	"sync/atomic"
)

// Hub holds the open sockets. Broadcast frames a notification once and
// writes the same bytes to every socket, from as many goroutines as the
// process has cores, without ever waiting on one: a write to a socket
// that keeps up is a non-blocking system call; a socket the kernel will
// not take more from gets later frames queued behind its own writer
// goroutine, up to a bound past which it is disconnected, so a slow reader
// never slows the others (see output). Broadcast copies the list of
// sockets under the hub's lock, into a recycled slice, and writes outside
// it, so a socket opening or closing waits at most for that copy.
type Hub struct {
	// subID is the id of the stream's subscription. Every socket of the
	// hub shares it, so a notification is the same bytes for all of them.
	subID string

	// mu guards sockets and each socket's slot. It is held only to add,
	// remove or copy pointers, never while writing to a socket.
	mu sync.Mutex
	// sockets holds the open sockets in no particular order. A socket
	// knows its index (slot): adding appends, removing moves the last
	// socket into the hole, both O(1) whatever the number of sockets.
	sockets []*socket
	// views recycles the copies of sockets that Broadcast writes from
	// outside the lock.
	views sync.Pool

	delivered, dropped atomic.Uint64
	metrics            *Metrics
}

// NewHub returns an empty hub with a fresh subscription id, counting its
// sockets and notifications in m (nil: nowhere).
func NewHub(m *Metrics) *Hub {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &Hub{subID: "0x" + hex.EncodeToString(b[:]), metrics: m}
}

// SubscriptionID is the id of the stream's subscription on every socket.
func (h *Hub) SubscriptionID() string { return h.subID }

func (h *Hub) add(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.slot = len(h.sockets)
	h.sockets = append(h.sockets, s)
	h.metrics.opened()
}

// remove takes s out of the hub; removing a socket that is not in it
// changes nothing.
func (h *Hub) remove(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := s.slot
	if i < 0 || i >= len(h.sockets) || h.sockets[i] != s {
		return
	}
	last := len(h.sockets) - 1
	h.sockets[i] = h.sockets[last]
	h.sockets[i].slot = i
	h.sockets[last] = nil // no reference keeps a closed socket alive
	h.sockets = h.sockets[:last]
	s.slot = -1
	h.metrics.left()
}

// list returns a copy of the open sockets, appended to dst[:0].
func (h *Hub) list(dst []*socket) []*socket {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(dst[:0], h.sockets...)
}

// Len is the number of open sockets.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sockets)
}

// Stats returns how many notifications were written or queued on
// sockets and how many found a full queue (and closed that socket).
func (h *Hub) Stats() (delivered, dropped uint64) { return h.delivered.Load(), h.dropped.Load() }

var (
	notePrefix = []byte(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"`)
	noteMiddle = []byte(`","result":`)
	noteSuffix = []byte(`}}`)
)

// Notification returns the eth_subscription message carrying result.
func Notification(subID string, result []byte) []byte {
	return appendNotification(make([]byte, 0, noteLen(subID, result)), subID, result)
}

func noteLen(subID string, result []byte) int {
	return len(notePrefix) + len(subID) + len(noteMiddle) + len(result) + len(noteSuffix)
}

func appendNotification(dst []byte, subID string, result []byte) []byte {
	dst = append(append(append(dst, notePrefix...), subID...), noteMiddle...)
	return append(append(dst, result...), noteSuffix...)
}

// Broadcast sends each of results (the JSON array of decoded
// transactions of one submission) to every socket as its own
// notification, in order. The notifications are framed once, into one
// buffer that each socket gets in one write: a feed that fell behind
// passes what piled up in one call and pays one system call per socket
// for all of it. Broadcast returns once every socket has the bytes in its
// kernel buffer or its queue; it never waits on the network.
func (h *Hub) Broadcast(results ...[]byte) {
	if len(results) == 0 {
		return
	}
	view, _ := h.views.Get().(*[]*socket)
	if view == nil {
		view = new([]*socket)
	}
	sockets := h.list(*view)
	defer func() {
		clear(sockets) // the pool must not keep closed sockets alive
		*view = sockets[:0]
		h.views.Put(view)
	}()
	if len(sockets) == 0 {
		return
	}
	size := 0
	for _, r := range results {
		size += maxFrameHeader + noteLen(h.subID, r)
	}
	buf := make([]byte, 0, size)
	for _, r := range results {
		buf = appendFrameHeader(buf, opText, noteLen(h.subID, r))
		buf = appendNotification(buf, h.subID, r)
	}
	h.sweep(sockets, buf, len(results))
}

// sweepShare is the fewest sockets worth a goroutine of their own in a
// sweep: below it, starting one costs more than it saves.
const sweepShare = 64

// sweep writes buf, which holds n notifications, to sockets, split into
// one contiguous part per core (each at least sweepShare sockets). One
// part runs here and the others in goroutines of this sweep, so both
// cores of a two-core machine make system calls at once.
func (h *Hub) sweep(sockets []*socket, buf []byte, n int) {
	parts := min(runtime.GOMAXPROCS(0), (len(sockets)+sweepShare-1)/sweepShare)
	per := (len(sockets) + parts - 1) / parts
	var wg sync.WaitGroup
	for i := per; i < len(sockets); i += per {
		part := sockets[i:min(i+per, len(sockets))]
		wg.Go(func() { h.send(part, buf, n) })
	}
	h.send(sockets[:per], buf, n)
	wg.Wait()
}

func (h *Hub) send(sockets []*socket, buf []byte, n int) {
	var ok, full, gone uint64
	for _, s := range sockets {
		switch s.write(buf, n) {
		case written, queued:
			ok++
		case overflowed:
			full++
		case closed:
			gone++
		}
	}
	h.delivered.Add(ok * uint64(n))
	h.dropped.Add(full * uint64(n))
	h.metrics.sent(ok*uint64(n), full*uint64(n), gone*uint64(n))
}

// keyHashes returns the distinct key hashes of the open sockets.
func (h *Hub) keyHashes() []string {
	seen := make(map[string]bool)
	var out []string
	for _, s := range h.list(nil) {
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
	for _, s := range h.list(nil) {
		if was[s.who.KeyHash] && !live[s.who.KeyHash] {
			s.revoked()
			n++
		}
	}
	return n
}
