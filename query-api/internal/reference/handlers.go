package reference

import (
	"math"

	"github.com/gin-gonic/gin"

	"blockspace.exchange/platform/httpx"
)

// Register mounts the public reference routes on r. needsDB is the frame's
// dependency gate for Postgres: while Postgres is down these routes answer
// 503 rather than serve data that can no longer be refreshed.
func (c *Cache) Register(r gin.IRouter, needsDB gin.HandlerFunc) {
	g := r.Group("/api/v1/p", needsDB, c.needsLoad)
	g.GET("/network", c.network)
	g.GET("/tokens", c.serve(func(e *encoded) []byte { return e.tokens }))
	g.GET("/user/fees", c.serve(func(e *encoded) []byte { return e.fees }))
	g.GET("/funding/contractAddress", c.contractAddress)
	g.GET("/funding/withdraw/dailyWithdrawLimits", c.serve(func(e *encoded) []byte { return e.limits }))
}

func (c *Cache) needsLoad(ctx *gin.Context) {
	if err := c.Ready(ctx); err != nil {
		httpx.Fail(ctx, httpx.Unavailable("reference data is loading, retry later", err))
		return
	}
	ctx.Next()
}

func (c *Cache) serve(part func(*encoded) []byte) gin.HandlerFunc {
	return func(ctx *gin.Context) {
		httpx.OKRaw(ctx, part(c.current.Load()))
	}
}

func (c *Cache) network(ctx *gin.Context) {
	chainID, err := httpx.QueryInt64(ctx, "chainId", true, 0, 1, math.MaxInt64)
	if err != nil {
		httpx.Fail(ctx, err)
		return
	}
	body, ok := c.current.Load().networks[chainID]
	if !ok {
		httpx.Fail(ctx, httpx.Refused(httpx.CodeFailed, "error.network.notFound", "no network with chainId %s", chainKey(chainID)))
		return
	}
	httpx.OKRaw(ctx, body)
}

func (c *Cache) contractAddress(ctx *gin.Context) {
	body := c.current.Load().contract
	if body == nil {
		httpx.Fail(ctx, httpx.Refused(httpx.CodeFailed, "error.funding.noContract", "no collateral contract is configured for chainId %s", chainKey(c.chainID)))
		return
	}
	httpx.OKRaw(ctx, body)
}
