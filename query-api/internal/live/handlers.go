package live

import (
	"context"
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

var (
	pong       = []byte("pong")
	errExpired = errors.New("access token has expired")
)

// handle answers one client message.
func (s *Server) handle(sock *socket, msg []byte) {
	if string(msg) == "ping" {
		sock.send(pong)
		return
	}
	req, err := DecodeRequest(msg)
	if err != nil {
		sock.send(errorReply(err.(*protoError)))
		return
	}
	for i, a := range req.Args {
		if refused := req.Refused[i]; refused != nil {
			sock.send(errorReply(refused))
			continue
		}
		switch req.Op {
		case OpLogin:
			s.login(sock, a.AccessToken)
		case OpSubscribe:
			s.subscribe(sock, a)
		case OpUnsubscribe:
			s.unsubscribe(sock, a)
		case OpQuery:
			s.query(sock, a)
		}
	}
}

func (s *Server) login(sock *socket, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	claims, err := s.verify(ctx, token)
	if err != nil {
		sock.send(errorReply(&protoError{code: httpx.CodeAuth, op: OpLogin, msg: describeToken(err)}))
		return
	}
	s.startSession(sock, token, claims)
	sock.send(encode(reply{Event: OpLogin, Code: CodeOK, Msg: "logged in", UserID: claims.User.UserID,
		ExpiresAt: claims.ExpiresAt.UnixMilli()}))
}

// describeToken tells the client what was wrong with its token without
// echoing any of it.
func describeToken(err error) string {
	if errors.Is(err, errExpired) || errors.Is(err, jwt.ErrTokenExpired) {
		return "access token has expired; refresh the session and log in again"
	}
	if errors.Is(err, auth.ErrUnknownKey) {
		return "access token is signed with an unknown key"
	}
	return "access token is invalid"
}

// userOf returns the user a socket acts for, 0 before login.
func (s *Server) userOf(sock *socket) int64 {
	s.hub.mu.RLock()
	defer s.hub.mu.RUnlock()
	return sock.user
}

func (s *Server) subscribe(sock *socket, a Arg) {
	kind := channels[a.Channel]
	if kind.private {
		if s.userOf(sock) == 0 {
			sock.send(errorReply(&protoError{code: httpx.CodeAuth, op: OpSubscribe, arg: &a,
				msg: "channel " + a.Channel + " is private: log in first"}))
			return
		}
		s.addSubscription(sock, a, nil)
		return
	}
	if a.Channel == ChannelCandles {
		s.subscribeCandles(sock, a)
		return
	}
	if a.InstrumentID != "" && a.Channel != ChannelMarket {
		found := false
		s.deps.Model.View(func(v markets.View) { _, found = v.Ticker(a.InstrumentID) })
		if !found {
			sock.send(errorReply(noMarket(OpSubscribe, a)))
			return
		}
	}
	if !kind.hasReplay {
		s.addSubscription(sock, a, nil)
		return
	}
	// The snapshot and the subscription are taken under one view of the
	// model: the first update queued after the snapshot is the next one.
	s.deps.Model.View(func(v markets.View) {
		s.addSubscription(sock, a, func() { s.replay(sock, a, v) })
	})
}

// addSubscription registers a and acknowledges it; then (also for a
// subscription the socket already had, which is how a client asks for a
// new snapshot) it queues the replay.
func (s *Server) addSubscription(sock *socket, a Arg, replay func()) {
	if _, full := s.hub.subscribe(sock, keyOf(a), s.cfg.MaxSubscriptions); full {
		sock.send(errorReply(&protoError{code: httpx.CodeTooMany, op: OpSubscribe, arg: &a,
			msg: "at most " + itoa(s.cfg.MaxSubscriptions) + " subscriptions per connection"}))
		return
	}
	sock.send(ack(OpSubscribe, a))
	if replay != nil {
		replay()
	}
}

// replay queues the current state of a book or ticker subscription.
func (s *Server) replay(sock *socket, a Arg, v markets.View) {
	now := s.cfg.Now().UnixMilli()
	switch a.Channel {
	case ChannelBook:
		books := v.Books(a.Family)
		if a.InstrumentID != "" {
			b, _ := v.Book(a.InstrumentID)
			books = []markets.Book{b}
		}
		for _, b := range books {
			sock.send(encode(push{Channel: ChannelBook, Time: now, Instrument: b.InstrumentID, Action: actionSnapshot, Payload: b}))
		}
	case ChannelTicker:
		tickers := v.Tickers(a.Family)
		if a.InstrumentID != "" {
			t, _ := v.Ticker(a.InstrumentID)
			tickers = []markets.Ticker{t}
		}
		for _, t := range tickers {
			sock.send(encode(push{Channel: ChannelTicker, Time: now, Instrument: t.InstrumentID, Action: actionSnapshot, Payload: t}))
		}
	}
}

func (s *Server) unsubscribe(sock *socket, a Arg) {
	if !s.hub.unsubscribe(sock, keyOf(a)) {
		sock.send(errorReply(&protoError{code: topics.CodeValidation, op: OpUnsubscribe, arg: &a,
			msg: "not subscribed to " + describeArg(a)}))
		return
	}
	sock.send(ack(OpUnsubscribe, a))
}

func noMarket(op string, a Arg) *protoError {
	return &protoError{code: topics.CodeMarketNotOpen, op: op, arg: &a, msg: "no market " + a.InstrumentID}
}

func describeArg(a Arg) string {
	out := "channel " + a.Channel
	if a.MarketType != "" {
		out += " marketType " + a.MarketType
	}
	if a.InstrumentID != "" {
		out += " instrumentId " + a.InstrumentID
	}
	return out
}

func itoa(n int) string { return formatRate(float64(n)) }
