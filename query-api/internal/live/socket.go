package live

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// socket is one client connection. readLoop owns reads and answers the
// client's messages; writeLoop owns every write, so gorilla's one-writer
// rule holds without a lock. Everything for the client, replies and
// pushes alike, goes through queue in order; closing goes through done.
type socket struct {
	srv   *Server
	conn  *websocket.Conn
	queue chan outgoing
	done  chan struct{}
	once  sync.Once

	closing struct {
		sync.Mutex
		code   int
		reason string
	}

	// Guarded by the hub's lock.
	public  map[subKey]bool
	private map[subKey]bool
	user    int64

	// session is the login state; only readLoop and the server's expiry
	// sweep touch it, under sessionMu.
	sessionMu sync.Mutex
	token     string
	expires   time.Time

	// bucket limits the client's message rate; readLoop only.
	tokens float64
	last   time.Time
}

func newSocket(srv *Server, conn *websocket.Conn) *socket {
	return &socket{srv: srv, conn: conn, queue: make(chan outgoing, srv.cfg.QueueLen), done: make(chan struct{}),
		public: make(map[subKey]bool), private: make(map[subKey]bool),
		tokens: float64(srv.cfg.RequestBurst), last: srv.cfg.Now()}
}

// outgoing is a message queued for the client: framed once for many
// sockets (prepared), or the text of a message for few.
type outgoing struct {
	prepared *websocket.PreparedMessage
	text     []byte
}

// send queues msg, a text message for this socket only (or for the few
// sockets of one user): written as it is, without the framing a prepared
// message costs to build.
func (s *socket) send(msg []byte) bool { return s.enqueue(outgoing{text: msg}) }

// prepare frames a text message once, so that sending it to many sockets
// costs each only the write.
func prepare(msg []byte) *websocket.PreparedMessage {
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, msg)
	if err != nil {
		panic("live: prepare message: " + err.Error()) // only fails for invalid types
	}
	return pm
}

// sendPrepared queues msg, framed for every socket it goes to.
func (s *socket) sendPrepared(msg *websocket.PreparedMessage) bool {
	return s.enqueue(outgoing{prepared: msg})
}

// enqueue queues msg without blocking. A full queue means the client
// reads slower than it is sent to: the socket is closed and false
// returned.
func (s *socket) enqueue(msg outgoing) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	select {
	case s.queue <- msg:
		return true
	default:
		s.closeWith(websocket.ClosePolicyViolation, "too slow: send queue overflowed")
		return false
	}
}

// privateMatch reports whether a private subscription covers channel for
// an instrument of family f. Called with the hub's lock held.
func (s *socket) privateMatch(channel string, f topics.Family, instrument string) bool {
	return s.private[subKey{channel, f, instrument, ""}] || s.private[subKey{channel, f, "", ""}] ||
		s.private[subKey{channel, "", "", ""}]
}

// closeWith asks the writer to send a close frame and end the connection.
func (s *socket) closeWith(code int, reason string) {
	s.once.Do(func() {
		s.closing.Lock()
		s.closing.code, s.closing.reason = code, reason
		s.closing.Unlock()
		close(s.done)
	})
}

func (s *socket) writeLoop() {
	cfg := s.srv.cfg
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	defer s.conn.Close()
	for {
		var err error
		select {
		case msg := <-s.queue:
			err = s.writeQueued(msg)
		case <-ping.C:
			err = s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteTimeout))
		case <-s.done:
			s.closing.Lock()
			msg := websocket.FormatCloseMessage(s.closing.code, s.closing.reason)
			s.closing.Unlock()
			_ = s.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
			return
		}
		if err != nil {
			s.closeWith(websocket.CloseAbnormalClosure, "")
			return
		}
	}
}

// writeBurst bounds how many queued messages one write deadline covers,
// so that pings still go out.
const writeBurst = 64

// writeQueued writes msg and whatever else is queued behind it, up to
// writeBurst messages, under one write deadline. A message it takes off
// the queue it always writes.
func (s *socket) writeQueued(msg outgoing) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout))
	for n := 1; ; n++ {
		var err error
		if msg.prepared != nil {
			err = s.conn.WritePreparedMessage(msg.prepared)
		} else {
			err = s.conn.WriteMessage(websocket.TextMessage, msg.text)
		}
		if err != nil {
			return err
		}
		if n == writeBurst {
			return nil
		}
		select {
		case msg = <-s.queue:
		default:
			return nil
		}
	}
}

// readLoop reads client messages until the connection ends. A client that
// sends nothing, not even a pong, for 2.5 ping intervals is gone.
func (s *socket) readLoop() {
	defer s.closeWith(websocket.CloseNormalClosure, "")
	cfg := s.srv.cfg
	s.conn.SetReadLimit(cfg.MaxMessage)
	deadline := func() { _ = s.conn.SetReadDeadline(time.Now().Add(cfg.PingInterval * 5 / 2)) }
	deadline()
	s.conn.SetPongHandler(func(string) error { deadline(); return nil })
	for {
		kind, msg, err := s.conn.ReadMessage()
		if err != nil {
			return
		}
		deadline()
		// Every client message counts against the rate, binary ones too:
		// each would be answered.
		if !s.allow() {
			s.send(errorReply(&protoError{code: httpx.CodeTooMany, msg: "too many messages: at most " +
				formatRate(cfg.RequestRate) + " per second"}))
			continue
		}
		if kind != websocket.TextMessage {
			s.send(errorReply(invalid("send JSON text messages, not binary")))
			continue
		}
		s.srv.handle(s, msg)
	}
}

// allow takes one token of the client's message bucket.
func (s *socket) allow() bool {
	now := s.srv.cfg.Now()
	s.tokens += now.Sub(s.last).Seconds() * s.srv.cfg.RequestRate
	s.last = now
	if burst := float64(s.srv.cfg.RequestBurst); s.tokens > burst {
		s.tokens = burst
	}
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

func (s *socket) session() (token string, expires time.Time) {
	s.sessionMu.Lock()
	defer s.sessionMu.Unlock()
	return s.token, s.expires
}

func (s *socket) setSession(token string, expires time.Time) {
	s.sessionMu.Lock()
	defer s.sessionMu.Unlock()
	s.token, s.expires = token, expires
}
