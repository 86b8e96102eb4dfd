// Package user serves the user's own reads: profile, accounts and one
// account. The profile is read on every client start and poll, so it is
// cached per user, pre-encoded, for a short time; writers announce changes
// on a Postgres channel and the cache drops the user at once.
package user

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/singleflight"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/users"
)

// Reads serves the user routes.
type Reads struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	ttl  time.Duration
	now  func() time.Time

	mu    sync.RWMutex // guards infos
	infos map[int64]cached
	max   int
	loads singleflight.Group // one Postgres read per user at a time
}

type cached struct {
	body []byte // {"user":{...}}
	at   time.Time
}

// New returns the reads; ttl bounds how stale a cached profile may be
// when a change notification is lost (the listener reconnecting).
func New(pool *pgxpool.Pool, log *slog.Logger, ttl time.Duration) *Reads {
	return &Reads{pool: pool, log: log, ttl: ttl, now: time.Now, infos: make(map[int64]cached), max: 100_000}
}

// Register mounts the routes behind bearer (the access-token check).
func (r *Reads) Register(rt gin.IRouter, bearer, needsDB gin.HandlerFunc) {
	g := rt.Group("/api/v1/user", needsDB, bearer)
	g.GET("/info", r.info)
	g.GET("/accounts", r.accounts)
	g.GET("/account/:accountId", r.account)
}

func (r *Reads) info(c *gin.Context) {
	id := auth.FromContext(c).User.UserID
	now := r.now()
	r.mu.RLock()
	e, ok := r.infos[id]
	r.mu.RUnlock()
	if ok && now.Sub(e.at) < r.ttl {
		httpx.OKRaw(c, e.body)
		return
	}
	// When an entry expires, every request of that user misses at once;
	// one of them reads Postgres and the others share its answer.
	v, err, _ := r.loads.Do(strconv.FormatInt(id, 10), func() (any, error) { return r.load(context.WithoutCancel(c.Request.Context()), id, now) })
	if errors.Is(err, users.ErrNotFound) {
		httpx.Fail(c, httpx.Unauthorized("the user of this access token does not exist"))
		return
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OKRaw(c, v.([]byte))
}

// load reads one user's profile, encodes it and caches it.
func (r *Reads) load(ctx context.Context, id int64, now time.Time) ([]byte, error) {
	u, err := users.Get(ctx, r.pool, id)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]users.User{"user": u})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.infos) >= r.max {
		clear(r.infos)
	}
	r.infos[id] = cached{body: body, at: now}
	r.mu.Unlock()
	return body, nil
}

func (r *Reads) accounts(c *gin.Context) {
	accs, err := users.Accounts(c, r.pool, auth.FromContext(c).User.UserID)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{"accounts": accs})
}

// account answers 403 for an account that is not the caller's, whether it
// belongs to someone else or does not exist, so ids cannot be probed.
func (r *Reads) account(c *gin.Context) {
	id, err := httpx.ParseInt64(c.Param("accountId"))
	if err != nil || id <= 0 {
		httpx.Fail(c, httpx.Invalid("path parameter accountId must be a positive integer, got %.40q", c.Param("accountId")))
		return
	}
	acc, err := users.AccountOf(c, r.pool, auth.FromContext(c).User.UserID, id)
	if errors.Is(err, users.ErrNotFound) {
		httpx.Fail(c, httpx.Forbidden("account is not yours"))
		return
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	httpx.OK(c, gin.H{"account": acc})
}

func (r *Reads) forget(id int64) {
	r.mu.Lock()
	delete(r.infos, id)
	r.mu.Unlock()
}

func (r *Reads) forgetAll() {
	r.mu.Lock()
	clear(r.infos)
	r.mu.Unlock()
}

// Run listens for user changes until ctx ends. While it is disconnected
// the cache is emptied and entries live at most ttl.
func (r *Reads) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.listen(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("listen for user changes", "error", err)
		}
		r.forgetAll()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *Reads) listen(ctx context.Context) error {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+users.ChangedChannel); err != nil {
		return err
	}
	defer func() {
		// The connection goes back to the pool: stop listening on it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = conn.Exec(uctx, "UNLISTEN *")
	}()
	r.forgetAll() // changes made before LISTEN took effect
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, err := httpx.ParseInt64(n.Payload)
		if err != nil {
			r.forgetAll()
			continue
		}
		r.forget(id)
	}
}
