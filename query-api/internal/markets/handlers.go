package markets

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// Register mounts the public market reads.
func (m *Model) Register(r gin.IRouter) {
	r.GET("/api/v1/p/wholeblock/markets", func(c *gin.Context) {
		httpx.OK(c, gin.H{"markets": m.WholeBlockMarkets()})
	})
	r.GET("/api/v1/p/inclusion-preconf/markets", func(c *gin.Context) {
		httpx.OK(c, gin.H{"markets": m.PreconfMarkets()})
	})
	r.GET("/api/v1/p/inclusion-preconf/market", m.preconfMarket)
}

func (m *Model) preconfMarket(c *gin.Context) {
	raw, ok := c.GetQuery("slot")
	if !ok || raw == "" {
		httpx.Fail(c, httpx.Invalid("parameter slot is required"))
		return
	}
	slot, err := strconv.ParseUint(raw, 10, 63)
	if err != nil {
		httpx.Fail(c, httpx.Invalid("parameter slot must be a non-negative integer, got %q", truncate(raw)))
		return
	}
	mk, found := m.PreconfMarket(slot)
	if !found {
		httpx.Fail(c, httpx.Refused(topics.CodeMarketNotOpen, "error.market.notFound", "no inclusion-preconf market for slot %d", slot))
		return
	}
	httpx.OK(c, gin.H{"market": mk})
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
