package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/serve"
)

// encoded holds the data part of every reference response, marshalled
// once per reload so a request only copies bytes.
type encoded struct {
	networks map[int64][]byte // chain id → {"network":{...}}
	tokens   []byte
	fees     []byte
	contract []byte // nil when the environment's chain has no contract set
	limits   []byte
	loadedAt time.Time
}

// Cache serves reference data for one environment's chain. Readers take
// the current snapshot through an atomic pointer; the reload loop swaps in
// a new one, so there is no lock on the request path.
type Cache struct {
	pool    *pgxpool.Pool
	chainID int64
	log     *slog.Logger
	current atomic.Pointer[encoded]
}

// NewCache returns an empty cache; Reload or Run fills it.
func NewCache(pool *pgxpool.Pool, chainID int64, log *slog.Logger) *Cache {
	return &Cache{pool: pool, chainID: chainID, log: log}
}

// Reload reads the reference tables and replaces the cached responses.
func (c *Cache) Reload(ctx context.Context) error {
	s, err := load(ctx, c.pool, c.chainID)
	if err != nil {
		return err
	}
	enc, err := encode(s, c.chainID)
	if err != nil {
		return fmt.Errorf("encode reference data: %w", err)
	}
	c.current.Store(enc)
	return nil
}

// Run reloads every interval until ctx ends. A failed reload keeps the
// previous data; the routes answer 503 meanwhile because they depend on
// Postgres being up (see Register).
func (c *Cache) Run(ctx context.Context, interval time.Duration) {
	serve.Every(ctx, interval, c.Reload, func(err error) { c.log.Warn("reload reference data", "error", err) })
}

// Ready reports whether the cache has been loaded at least once.
func (c *Cache) Ready(context.Context) error {
	if c.current.Load() == nil {
		return errors.New("reference data not loaded yet")
	}
	return nil
}

func encode(s snapshot, chainID int64) (*encoded, error) {
	enc := &encoded{networks: make(map[int64][]byte, len(s.networks)), loadedAt: time.Now()}
	var err error
	for _, n := range s.networks {
		if enc.networks[n.ChainID], err = json.Marshal(map[string]Network{"network": n}); err != nil {
			return nil, err
		}
		if n.ChainID == chainID && n.collateral != nil {
			if enc.contract, err = json.Marshal(map[string]string{"contractAddress": *n.collateral}); err != nil {
				return nil, err
			}
		}
	}
	if enc.tokens, err = json.Marshal(map[string][]Token{"tokens": nonNil(s.tokens)}); err != nil {
		return nil, err
	}
	if enc.fees, err = json.Marshal(s.fees); err != nil {
		return nil, err
	}
	enc.limits, err = json.Marshal(map[string][]DailyWithdrawLimit{"dailyWithdrawLimits": nonNil(s.limits)})
	return enc, err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func chainKey(id int64) string { return strconv.FormatInt(id, 10) }
