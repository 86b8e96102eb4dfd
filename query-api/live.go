package queryapi

import (
	"log/slog"
	"net/http"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/query-api/internal/live"
	"blockspace.exchange/query-api/internal/markets"
)

// liveRoute is the WebSocket's route. It is served beside the gin engine,
// not through it: a socket lives for hours and must not hold one of the
// engine's in-flight request slots, nor be logged and timed as a request.
var liveRoute = httpx.Route{Method: http.MethodGet, Path: "/ws"}

// serveLive builds the WebSocket over the market model and, with Kafka
// brokers, the account feed that fills its private channels.
func (s *Service) serveLive(model *markets.Model, deps Deps, log *slog.Logger) error {
	var positions live.PositionReader
	var sessions live.SessionChecker
	var candles live.CandleReader
	if deps.Pool != nil {
		positions = s.reads
		sessions = live.PostgresSessions{Pool: deps.Pool}
		candles = s.candles
	}
	s.live = live.NewServer(s.cfg.Live, live.Deps{Model: model, Tokens: s.keys, Sessions: sessions, Positions: positions,
		Candles: candles, Clock: s.cfg.Environment, Logger: log, Metrics: deps.Metrics})
	if len(s.cfg.Kafka.Brokers) == 0 {
		return nil
	}
	kcfg := s.cfg.Kafka
	kcfg.ClientID += "-accounts"
	feed, err := live.NewAccountFeed(kcfg, s.live.Hub(), log)
	if err != nil {
		return err
	}
	s.accounts = feed
	return nil
}

// handler sends GET /ws to the WebSocket, whose answers carry an
// X-Request-ID as the engine's do, and everything else to the engine.
// Every read answers HEAD as it answers GET, without the body.
func (s *Service) handler() http.Handler {
	live := httpx.WithRequestID(s.live)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == liveRoute.Path && r.Method == liveRoute.Method {
			live.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodHead {
			// The server drops the body of a HEAD request's answer; the
			// engine sees the GET.
			get := r.Clone(r.Context())
			get.Method = http.MethodGet
			s.engine.ServeHTTP(headWriter{w}, get)
			return
		}
		s.engine.ServeHTTP(w, r)
	})
}

// headWriter answers a HEAD request with the headers of its GET and no
// body, whatever server the handler runs in.
type headWriter struct{ http.ResponseWriter }

func (h headWriter) Write(b []byte) (int, error) { return len(b), nil }
