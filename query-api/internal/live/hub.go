package live

import (
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"blockspace.exchange/topics"
)

// subKey names what a subscription receives: a channel of a family, for
// one instrument or (instrument "") all of the family's. Private channels
// that take no market have family "".
type subKey struct {
	channel    string
	family     topics.Family
	instrument string
	interval   string // channel candles only
}

func keyOf(a Arg) subKey { return subKey{a.Channel, a.Family, a.InstrumentID, a.Interval} }

// Hub holds the open sockets and their subscriptions. Publishing never
// blocks: each socket has a bounded queue, and a socket whose queue is
// full is disconnected, so a slow reader never slows the others.
//
// Lock order: the market model's lock (held while the model publishes and
// while a subscriber takes its snapshot), then mu.
type Hub struct {
	mu      sync.RWMutex
	sockets map[*socket]struct{}
	public  map[subKey]map[*socket]struct{}
	users   map[int64]map[*socket]struct{} // logged-in sockets by user

	sent, dropped atomic.Uint64
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{sockets: make(map[*socket]struct{}), public: make(map[subKey]map[*socket]struct{}),
		users: make(map[int64]map[*socket]struct{})}
}

// Stats are counters of a hub since it started.
type Stats struct {
	Sockets int    // open now
	Sent    uint64 // messages queued to sockets
	Dropped uint64 // sockets disconnected because their queue was full
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.mu.RLock()
	n := len(h.sockets)
	h.mu.RUnlock()
	return Stats{Sockets: n, Sent: h.sent.Load(), Dropped: h.dropped.Load()}
}

func (h *Hub) add(s *socket) {
	h.mu.Lock()
	h.sockets[s] = struct{}{}
	h.mu.Unlock()
}

// remove forgets a closed socket and all its subscriptions.
func (h *Hub) remove(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sockets, s)
	for k := range s.public {
		h.unsubscribeLocked(s, k)
	}
	h.logoutLocked(s)
}

// subscribe adds a subscription; it reports false when the socket already
// has it, or has limit subscriptions.
func (h *Hub) subscribe(s *socket, k subKey, limit int) (added, full bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := s.public
	if channels[k.channel].private {
		subs = s.private
	}
	if subs[k] {
		return false, false
	}
	if len(s.public)+len(s.private) >= limit {
		return false, true
	}
	subs[k] = true
	if !channels[k.channel].private {
		set := h.public[k]
		if set == nil {
			set = make(map[*socket]struct{})
			h.public[k] = set
		}
		set[s] = struct{}{}
	}
	return true, false
}

// unsubscribe removes a subscription; it reports false when there was none.
func (h *Hub) unsubscribe(s *socket, k subKey) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if channels[k.channel].private {
		had := s.private[k]
		delete(s.private, k)
		return had
	}
	if !s.public[k] {
		return false
	}
	h.unsubscribeLocked(s, k)
	return true
}

func (h *Hub) unsubscribeLocked(s *socket, k subKey) {
	delete(s.public, k)
	if set := h.public[k]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.public, k)
		}
	}
}

// login records that s acts for user from now on. Logging in as another
// user ends the private subscriptions of the first.
func (h *Hub) login(s *socket, user int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.user != 0 && s.user != user {
		h.logoutLocked(s)
	}
	s.user = user
	set := h.users[user]
	if set == nil {
		set = make(map[*socket]struct{})
		h.users[user] = set
	}
	set[s] = struct{}{}
}

// logout ends s's session and its private subscriptions, returning the
// subscriptions it ended.
func (h *Hub) logout(s *socket) []subKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logoutLocked(s)
}

func (h *Hub) logoutLocked(s *socket) []subKey {
	ended := make([]subKey, 0, len(s.private))
	for k := range s.private {
		ended = append(ended, k)
	}
	clear(s.private)
	if set := h.users[s.user]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.users, s.user)
		}
	}
	s.user = 0
	return ended
}

// wants reports whether anyone subscribed to channel for instrument of
// family, so that publishers skip encoding what nobody reads.
func (h *Hub) wants(channel string, f topics.Family, instrument string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.public[subKey{channel, f, instrument, ""}])+len(h.public[subKey{channel, f, "", ""}]) > 0
}

// publish queues msg on every socket subscribed to channel for the
// instrument or for its whole family; a socket with both gets it once.
func (h *Hub) publish(channel string, f topics.Family, instrument string, msg []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	all, one := h.public[subKey{channel, f, "", ""}], h.public[subKey{channel, f, instrument, ""}]
	if len(all)+len(one) == 0 {
		return
	}
	pm := prepare(msg)
	for s := range all {
		h.deliver(s, pm)
	}
	for s := range one {
		if _, dup := all[s]; !dup {
			h.deliver(s, pm)
		}
	}
}

// subscribers returns how many sockets subscribed to exactly k.
func (h *Hub) subscribers(k subKey) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.public[k])
}

// publishKey queues msg on every socket subscribed to exactly k.
func (h *Hub) publishKey(k subKey, msg []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.public[k]) == 0 {
		return
	}
	pm := prepare(msg)
	for s := range h.public[k] {
		h.deliver(s, pm)
	}
}

// wantsUser reports whether a socket of user subscribed to channel for
// the family and instrument.
func (h *Hub) wantsUser(user int64, channel string, f topics.Family, instrument string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.users[user] {
		if s.privateMatch(channel, f, instrument) {
			return true
		}
	}
	return false
}

// publishUser queues msg on the sockets of user subscribed to channel for
// the family and instrument. Nobody else's socket is looked at. A user has
// few sockets, so msg goes as it is: framing it once for them (a prepared
// message) would cost more than the writes it saves.
func (h *Hub) publishUser(user int64, channel string, f topics.Family, instrument string, msg []byte) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.users[user] {
		if s.privateMatch(channel, f, instrument) {
			h.count(s.send(msg))
		}
	}
}

func (h *Hub) deliver(s *socket, msg *websocket.PreparedMessage) { h.count(s.sendPrepared(msg)) }

// count records a message queued to a socket, or the socket dropped.
func (h *Hub) count(queued bool) {
	if queued {
		h.sent.Add(1)
	} else {
		h.dropped.Add(1)
	}
}

// loggedIn returns the sockets that act for a user.
func (h *Hub) loggedIn() []*socket {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*socket
	for _, set := range h.users {
		for s := range set {
			out = append(out, s)
		}
	}
	return out
}

// all returns every open socket.
func (h *Hub) all() []*socket {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*socket, 0, len(h.sockets))
	for s := range h.sockets {
		out = append(out, s)
	}
	return out
}

// anyUser reports whether a socket of user has a private subscription to
// channel, for any market.
func (h *Hub) anyUser(user int64, channel string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.users[user] {
		for k := range s.private {
			if k.channel == channel {
				return true
			}
		}
	}
	return false
}
