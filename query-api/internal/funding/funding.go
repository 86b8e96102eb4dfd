// Package funding serves the caller's funding and account-transaction
// reads: deposits, withdrawal requests with the remaining daily limits,
// and the account transactions (ledger postings on user accounts).
package funding

import (
	"math"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
)

// Page sizes of the list reads (docs/api.md "Values and identifiers":
// default 20, max 100).
const (
	DefaultLimit = 20
	MaxLimit     = 100
	// MaxRequestIDs bounds the requestIds of one status read.
	MaxRequestIDs = 100
)

// Reads serves the funding and account-transaction routes.
type Reads struct {
	pool    *pgxpool.Pool
	chainID int64 // the environment's chain: its withdraw limits are listed
}

// New returns the reads of the environment whose chain is chainID.
func New(pool *pgxpool.Pool, chainID int64) *Reads {
	return &Reads{pool: pool, chainID: chainID}
}

// Register mounts the routes behind bearer (the access-token check).
func (r *Reads) Register(rt gin.IRouter, bearer, needsDB gin.HandlerFunc) {
	g := rt.Group("/api/v1/user", needsDB, bearer)
	g.GET("/funding/deposits", r.deposits)
	g.GET("/funding/withdraw/status", r.withdrawStatus)
	g.GET("/funding/withdraw/limits", r.withdrawLimits)
	g.GET("/funding/withdraws", r.withdraws)
	g.GET("/account/txs", r.userTxs)
	g.GET("/account/:accountId/txs", r.accountTxs)
}

func userID(c *gin.Context) int64 { return auth.FromContext(c).User.UserID }

// startID reads startId: the list keeps ids at or below it. 0, the
// default of the interface's startId parameters, and no startId both
// start at the newest.
func startID(c *gin.Context) (int64, error) {
	n, err := httpx.QueryInt64(c, "startId", false, 0, 0, math.MaxInt64)
	if n == 0 {
		n = math.MaxInt64
	}
	return n, err
}

// limit reads the page size: default 20, at most 100.
func limit(c *gin.Context) (int, error) {
	n, err := httpx.QueryInt64(c, "limit", false, DefaultLimit, 1, MaxLimit)
	return int(n), err
}
