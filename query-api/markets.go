package queryapi

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/environment"
	"blockspace.exchange/query-api/internal/markets"
	"blockspace.exchange/topics"
)

// feedSlots is how many slots back the market feed starts reading: a
// live slot's market.open is written 64 slots before its block and its
// finalized tick 64 slots after, plus a margin for clock restarts.
const feedSlots = topics.MarketHorizon + environment.FinalitySlots + 16

// serveMarkets mounts the public market reads and, with Kafka brokers
// configured, the feed that keeps them current; it returns the model for
// the live feeds.
func (s *Service) serveMarkets(engine *gin.Engine, log *slog.Logger) (*markets.Model, error) {
	model := markets.NewModel()
	model.Register(engine)
	if len(s.cfg.Kafka.Brokers) == 0 {
		return model, nil
	}
	slot := s.cfg.Environment.SlotLength
	if slot <= 0 {
		slot = 12 * time.Second
	}
	feed, err := markets.NewFeed(s.cfg.Kafka, time.Now().Add(-feedSlots*slot), model, log)
	if err != nil {
		return nil, err
	}
	s.feed = feed
	return model, nil
}
