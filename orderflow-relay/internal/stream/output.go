package stream

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// Server frames (RFC 6455 section 5.2: final, unmasked, the length in 7,
// 16 or 64 bits), built here rather than by gorilla/websocket so that a
// notification is framed once for every socket and every frame a socket
// sends goes through its output. gorilla/websocket only reads.
const (
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA

	maxFrameHeader = 10
)

func appendFrameHeader(dst []byte, op byte, n int) []byte {
	switch {
	case n <= 125:
		return append(dst, 0x80|op, byte(n))
	case n <= 0xFFFF:
		return append(dst, 0x80|op, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(dst, 0x80|op, 127), uint64(n))
	}
}

func appendFrame(dst []byte, op byte, payload []byte) []byte {
	return append(appendFrameHeader(dst, op, len(payload)), payload...)
}

// TextFrame returns payload as one complete, final WebSocket text frame
// as a server sends it.
func TextFrame(payload []byte) []byte {
	return appendFrame(make([]byte, 0, maxFrameHeader+len(payload)), opText, payload)
}

var pingFrame = appendFrame(nil, opPing, nil)

// output is the sending side of a socket. Every frame the server sends
// (notifications, replies, pings, pongs, the close frame) goes through
// write, so frames never interleave.
//
// A write to a socket that keeps up happens at once, in the caller, as
// one non-blocking system call made under mu: it copies into the
// kernel's buffer and never waits on the network, so holding mu across it
// is like holding it across a copy. What the kernel does not take (the
// reader fell behind and its buffers are full) hands the connection to
// the socket's writer goroutine (slow): it writes the rest with a write
// deadline while later frames queue behind it, up to QueueLen messages,
// past which the socket is disconnected. Once it has written everything,
// writes happen in the caller again.
type output struct {
	mu sync.Mutex
	// raw makes the non-blocking writes; nil (a connection that is not a
	// file descriptor) sends every write through the writer goroutine.
	raw syscall.RawConn
	// slow: the writer goroutine owns the connection; others queue.
	slow bool
	// tail is the unwritten rest of a frame already begun on the wire: it
	// goes before anything else, the close frame included.
	tail    []byte
	pending net.Buffers // whole frames queued behind tail
	queued  int         // messages in pending
	// closed: finish has the connection; nothing else is written.
	closed bool
	// kick tells the writer goroutine that it owns the connection.
	kick chan struct{}
}

func (o *output) init(nc net.Conn) {
	o.kick = make(chan struct{}, 1)
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			o.raw = raw
		}
	}
}

// writeResult is what became of one write.
type writeResult int

const (
	written    writeResult = iota // all in the kernel's buffer, or begun there
	queued                        // behind the writer goroutine
	overflowed                    // the queue was full: the socket is closing
	closed                        // the socket was closing already
)

// write sends frames, which hold n messages (notifications, replies,
// control frames), or queues them. It never waits on the network.
func (s *socket) write(frames []byte, n int) writeResult {
	o := &s.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return closed
	}
	if o.slow {
		if o.queued+n > s.srv.cfg.QueueLen {
			s.overflow()
			return overflowed
		}
		o.pending = append(o.pending, frames)
		o.queued += n
		return queued
	}
	k, err := o.tryWrite(frames)
	if err != nil {
		s.closeWith(websocket.CloseAbnormalClosure, "", disconnectClosed)
		return closed
	}
	if k < len(frames) {
		o.slow, o.tail = true, frames[k:]
		select {
		case o.kick <- struct{}{}:
		default: // unreachable: a slow period has one kick, taken by drain
		}
	}
	return written
}

// tryWrite makes one non-blocking write of b and returns how much the
// kernel took. A full buffer is not an error.
func (o *output) tryWrite(b []byte) (int, error) {
	if o.raw == nil {
		return 0, nil
	}
	var n int
	var werr error
	err := o.raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // one attempt: never park on the poller
	})
	n = max(n, 0)
	switch {
	case err != nil:
		return n, err
	case werr == nil, errors.Is(werr, syscall.EAGAIN), errors.Is(werr, syscall.EINTR):
		return n, nil
	}
	return n, werr
}

// drain is the writer goroutine's part after a kick: it writes what
// queued, with a deadline per write, until nothing is left, then gives
// the connection back to write.
func (s *socket) drain() error {
	o := &s.out
	nc := s.conn.NetConn()
	for {
		o.mu.Lock()
		bufs := o.pending
		if o.tail != nil {
			bufs = append(net.Buffers{o.tail}, bufs...)
		}
		o.tail, o.pending, o.queued = nil, nil, 0
		if len(bufs) == 0 {
			o.slow = false
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
		if err := nc.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout)); err != nil {
			return err
		}
		if _, err := bufs.WriteTo(nc); err != nil {
			return err
		}
	}
}

// finish sends the close frame, after the rest of a frame already begun,
// within closeGrace; what was queued is dropped. From here on nothing
// else writes.
func (s *socket) finish() {
	o := &s.out
	o.mu.Lock()
	o.closed = true
	tail := o.tail
	o.tail, o.pending, o.queued = nil, nil, 0
	o.mu.Unlock()
	s.closing.Lock()
	code, reason := s.closing.code, s.closing.reason
	s.closing.Unlock()
	if code == websocket.CloseAbnormalClosure {
		return // the connection failed: 1006 is never sent
	}
	nc := s.conn.NetConn()
	_ = nc.SetWriteDeadline(time.Now().Add(closeGrace))
	bufs := net.Buffers{tail, appendFrame(nil, opClose, websocket.FormatCloseMessage(code, reason))}
	_, _ = bufs.WriteTo(nc)
}
