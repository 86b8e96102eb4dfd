// Package tradingreads serves the trading reads of both market families from
// the tables the settler writes (orders, trades, positions): the public
// listings of a market, which never show who traded, and the caller's own
// orders and trades across its accounts.
package tradingreads

import (
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/topics"
)

// Page sizes of every trading list (docs/api.md "Values and identifiers":
// default 10).
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// familySpan is the width of a family's range of market ids: a family's
// markets are base + slot with slot below 10^12 (docs/api.md "Values and
// identifiers", topics.MarketID).
const familySpan = 1_000_000_000_000

// maxSlot is the highest slot a market id can carry.
const maxSlot = familySpan - 1

// family is one market family as the reads see it.
type family struct {
	name       topics.Family
	prefix     string // instrument id prefix, ETH-WB- or ETH-PC-
	minMarket  int64  // lowest and highest market id of the family
	maxMarket  int64
	withBlocks bool // whole-block trades carry preconfQuantity
}

func newFamily(f topics.Family) family {
	base := topics.MarketID(f, 0)
	return family{
		name: f, prefix: strings.TrimSuffix(topics.InstrumentID(f, 0), "0"),
		minMarket: base, maxMarket: base + familySpan - 1, withBlocks: f == topics.WholeBlock,
	}
}

// Reads serves the trading routes.
type Reads struct {
	pool *pgxpool.Pool
}

// New returns the reads over pool.
func New(pool *pgxpool.Pool) *Reads { return &Reads{pool: pool} }

// Register mounts the public reads of both families and the caller's own
// reads behind bearer (the access-token check); needsDB answers 503 while
// Postgres is down.
func (r *Reads) Register(rt gin.IRouter, bearer, needsDB gin.HandlerFunc) {
	for _, f := range []topics.Family{topics.WholeBlock, topics.InclusionPreconf} {
		fam := newFamily(f)
		public := rt.Group("/api/v1/p/"+string(f), needsDB)
		public.GET("/orders", r.publicOrders(fam))
		public.GET("/trades", r.publicTrades(fam))
		public.GET("/positions", r.publicPositions(fam))
		own := rt.Group("/api/v1/user/"+string(f), needsDB, bearer)
		own.GET("/orders", r.ownOrders(fam))
		own.GET("/trades", r.ownTrades(fam))
		own.GET("/positions", r.ownPositions(fam))
	}
}
