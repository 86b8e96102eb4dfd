// Package orderentry is order entry: the place and cancel routes of both market
// families. A place is checked against the market catalog, then the buyer's
// funds are reserved, the order row and the outbox row of its order.place
// command are written in one Postgres transaction (docs/architecture.md
// "Reserve at the edge"), and the command is published to its slot's
// partition of `orders`. Concurrent requests share that transaction (group
// commit). Cancels look the orders up and publish the cancel commands; the
// matcher decides what is cancelled.
package orderentry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/ingress/internal/catalog"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
)

// Config configures order entry. Zero values take the defaults.
type Config struct {
	// MaxPlaceOrders bounds the orders of one place request (50).
	MaxPlaceOrders int
	// MaxCancelOrders bounds the orders one cancel-batch names (100).
	MaxCancelOrders int
	// BatchWait is how long the committer waits for more orders before
	// it writes a batch (1ms); BatchMax bounds a batch (1,000 orders);
	// Lanes is how many batches may be written at once (2), each on its
	// own Postgres connection.
	BatchWait time.Duration
	BatchMax  int
	Lanes     int
	// AnswerWait is how long a place or cancel answer waits for the
	// matcher's decision before it answers without it (200ms); a negative
	// value never waits.
	AnswerWait time.Duration
	// LayoutRefresh is how often the orders layout is re-read (30s).
	LayoutRefresh time.Duration
	// SlotLength is the environment's slot length: the catalog's feed
	// starts catalog.Horizon(SlotLength) back.
	SlotLength time.Duration
	// Now is the wall clock (time.Now), for createDate and market
	// maturity.
	Now func() time.Time
}

// DefaultConfig is the configuration whose values Config's zero values
// take.
func DefaultConfig() Config {
	return Config{
		MaxPlaceOrders: 50, MaxCancelOrders: 100,
		BatchWait: time.Millisecond, BatchMax: 1000, Lanes: 2,
		AnswerWait: 200 * time.Millisecond, LayoutRefresh: 30 * time.Second,
		Now: time.Now,
	}
}

func (c *Config) applyDefaults() {
	d := DefaultConfig()
	if c.MaxPlaceOrders <= 0 {
		c.MaxPlaceOrders = d.MaxPlaceOrders
	}
	if c.MaxCancelOrders <= 0 {
		c.MaxCancelOrders = d.MaxCancelOrders
	}
	if c.BatchWait <= 0 {
		c.BatchWait = d.BatchWait
	}
	if c.BatchMax <= 0 {
		c.BatchMax = d.BatchMax
	}
	if c.Lanes <= 0 {
		c.Lanes = d.Lanes
	}
	if c.AnswerWait == 0 {
		c.AnswerWait = d.AnswerWait
	}
	if c.LayoutRefresh <= 0 {
		c.LayoutRefresh = d.LayoutRefresh
	}
	if c.Now == nil {
		c.Now = d.Now
	}
}

// Service serves order entry.
type Service struct {
	cfg      Config
	pool     *pgxpool.Pool
	kcl      *kgo.Client
	outbox   *outbox.Outbox
	catalog  *catalog.Catalog
	accounts *accounts
	commits  *committer
	log      *slog.Logger
	// decisions is nil when answers do not wait for the matcher.
	decisions *decisions
	// lag is the catalog feed's consumer lag (group label: its client
	// id), made here so that it can be registered before Run.
	lag *kafka.Lag

	layoutMu sync.Mutex
	layout   topics.SlotLayout
	layoutAt time.Time

	// cancelPrefix and cancelSeq make cancel command ids unique across
	// processes and restarts.
	cancelPrefix string
	cancelSeq    atomic.Int64
}

// New returns the service. Place commands go through out; cancels are
// published with kcl directly, as they reserve nothing.
func New(cfg Config, pool *pgxpool.Pool, kcl *kgo.Client, out *outbox.Outbox, log *slog.Logger) (*Service, error) {
	cfg.applyDefaults()
	var prefix [6]byte
	if _, err := rand.Read(prefix[:]); err != nil {
		return nil, fmt.Errorf("trading: %w", err)
	}
	s := &Service{
		cfg: cfg, pool: pool, kcl: kcl, outbox: out, log: log,
		catalog: catalog.New(), accounts: newAccounts(pool, 1<<16),
		cancelPrefix: hex.EncodeToString(prefix[:]), lag: kafka.NewLag(CatalogFeedGroup),
	}
	s.commits = newCommitter(s)
	if cfg.AnswerWait > 0 {
		s.decisions = newDecisions()
	}
	return s, nil
}

// CatalogFeedGroup is the group label of the catalog feed's lag: the feed
// reads in no consumer group.
const CatalogFeedGroup = "ingress-catalog"

// Lag returns the catalog feed's consumer metrics, to register.
func (s *Service) Lag() *kafka.Lag { return s.lag }

// Catalog is the market catalog the service checks orders against.
func (s *Service) Catalog() *catalog.Catalog { return s.catalog }

// PlaceRoutes are the place routes of both families. Their requests wait
// for a group commit of their lane, not for a pool connection each.
func PlaceRoutes() []string {
	return []string{familyBase(topics.WholeBlock) + "/order", familyBase(topics.InclusionPreconf) + "/order"}
}

// familyBase is the path under which a family's routes are mounted.
func familyBase(fam topics.Family) string { return "/api/v1/" + string(fam) }

// Register mounts the routes of both families. needs answer 503 while a
// dependency is down, before anything is reserved; the routes also wait
// for the market catalog to have caught up with the log.
func (s *Service) Register(r gin.IRouter, bearer gin.HandlerFunc, needs ...gin.HandlerFunc) {
	needs = append(needs, httpx.Needs("markets", s.catalog.Err))
	for _, fam := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		g := r.Group(familyBase(fam), append(needs, bearer, httpx.RequireJSON())...)
		g.POST("/order", respond(fam, "orders", s.place))
		g.POST("/cancel-order", respond(fam, "items", s.cancelOrder))
		g.POST("/cancel-batch-orders", respond(fam, "items", s.cancelBatch))
		g.POST("/cancel-all-orders", respond(fam, "cancelledOrderIds", s.cancelAll))
	}
}

// respond serves a route of fam whose work is do: its result is answered
// as data.<key>, its error through the frame.
func respond[T any](fam topics.Family, key string, do func(*gin.Context, topics.Family) (T, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, err := do(c, fam)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		httpx.OK(c, gin.H{key: v})
	}
}

// bodyOf reads the request body (the frame caps its size) and decodes it.
func bodyOf[T any](c *gin.Context, decode func([]byte) (T, error)) (T, error) {
	body, err := httpx.ReadBody(c)
	if err != nil {
		var zero T
		return zero, err
	}
	return decode(body)
}

// Run follows the log into the market catalog until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	since := s.cfg.Now().Add(-catalog.Horizon(s.cfg.SlotLength))
	feed, err := catalog.NewFeed(s.kcl, since, s.catalog, s.log)
	if err != nil {
		return err
	}
	if s.decisions != nil {
		feed.Tap(s.decisions.observe)
	}
	feed.CountIn(s.lag)
	return feed.Run(ctx)
}

// slotLayout returns the orders layout, read again every LayoutRefresh.
// When a refresh fails the last layout is kept: a live market never
// changes partition.
func (s *Service) slotLayout(ctx context.Context) (topics.SlotLayout, error) {
	s.layoutMu.Lock()
	defer s.layoutMu.Unlock()
	now := s.cfg.Now()
	if !s.layoutAt.IsZero() && now.Sub(s.layoutAt) < s.cfg.LayoutRefresh {
		return s.layout, nil
	}
	lctx, cancel := context.WithTimeout(ctx, s.outbox.PublishTimeout)
	defer cancel()
	l, err := kafka.Layout(lctx, s.kcl, topics.Orders)
	if err != nil {
		if s.layoutAt.IsZero() {
			return topics.SlotLayout{}, fmt.Errorf("read orders layout: %w: %v", httpx.ErrUnavailable, err)
		}
		s.log.Warn("trading: keeping the last orders layout", "error", err)
		s.layoutAt = now
		return s.layout, nil
	}
	s.layout, s.layoutAt = l, now
	return l, nil
}
