package live

import (
	"context"
	"time"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/query-api/internal/tradingreads"
)

// CurrentSlot is the answer of the currentSlot query: the slot whose block
// started last, when it started and when the next one starts, from the
// environment's genesis and slot length.
type CurrentSlot struct {
	Slot         uint64 `json:"slot"`
	SlotTime     int64  `json:"slotTime"`
	NextSlotTime int64  `json:"nextSlotTime"`
	SlotLength   int64  `json:"slotLength"`
	GenesisTime  int64  `json:"genesisTime"`
	ServerTime   int64  `json:"serverTime"`
}

// query answers one query arg.
func (s *Server) query(sock *socket, a Arg) {
	if queries[a.QueryType].private && s.userOf(sock) == 0 {
		sock.send(errorReply(&protoError{code: httpx.CodeAuth, op: OpQuery, arg: &a,
			msg: "queryType " + a.QueryType + " is private: log in first"}))
		return
	}
	var (
		payload any
		failed  *protoError
	)
	switch a.QueryType {
	case QueryMarkets:
		s.deps.Model.View(func(v markets.View) { payload = v.Markets(a.Family) })
	case QueryBook:
		s.deps.Model.View(func(v markets.View) {
			if b, ok := v.Book(a.InstrumentID); ok {
				payload = b
			}
		})
	case QueryRecentTrades:
		limit := a.Limit
		if limit == 0 {
			limit = defRecentTrades
		}
		s.deps.Model.View(func(v markets.View) {
			if t, ok := v.Trades(a.InstrumentID, limit); ok {
				payload = t
			}
		})
	case QueryCurrentSlot:
		payload, failed = s.currentSlot()
	case QueryOpenOrders:
		user := s.userOf(sock)
		s.deps.Model.View(func(v markets.View) { payload = v.OpenOrders(user, a.Family, a.InstrumentID) })
	case QueryPositions:
		payload, failed = s.positions(s.userOf(sock), a)
	}
	if failed == nil && payload == nil {
		failed = noMarket(OpQuery, a)
	}
	if failed != nil {
		failed.op, failed.arg = OpQuery, &a
		sock.send(errorReply(failed))
		return
	}
	sock.send(encode(answer{Query: a.QueryType, Instrument: a.InstrumentID, Payload: payload}))
}

func (s *Server) currentSlot() (any, *protoError) {
	env := s.deps.Clock
	now := s.cfg.Now()
	slot, ok := env.SlotAt(now)
	if !ok {
		return nil, &protoError{code: httpx.CodeUnavailable, msg: "the slot clock has not started: genesis is unknown or in the future"}
	}
	return CurrentSlot{Slot: slot, SlotTime: env.BlockTime(slot).UnixMilli(), NextSlotTime: env.BlockTime(slot + 1).UnixMilli(),
		SlotLength: env.SlotLength.Milliseconds(), GenesisTime: env.Genesis.UnixMilli(), ServerTime: now.UnixMilli()}, nil
}

func (s *Server) positions(user int64, a Arg) (any, *protoError) {
	if s.deps.Positions == nil {
		return nil, &protoError{code: httpx.CodeUnavailable, msg: "positions are not available on this server"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := s.deps.Positions.OwnPositions(ctx, user,
		tradingreads.PositionQuery{Family: a.Family, Instrument: a.InstrumentID, Limit: maxPositions})
	if err != nil {
		s.deps.Logger.Warn("live: positions query", "user", user, "error", err)
		return nil, &protoError{code: httpx.CodeUnavailable, msg: "positions cannot be read now; retry"}
	}
	return ps, nil
}
