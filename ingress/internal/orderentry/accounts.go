package orderentry

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/users"
)

// accounts answers whose preconf trading account an account id is. An
// account never changes its owner or type, so what was read once stays
// true: the answers are kept in memory (bounded, emptied when full) and
// only unknown ids cost a query.
type accounts struct {
	pool *pgxpool.Pool
	max  int

	mu     sync.RWMutex
	owners map[int64]int64 // preconf trading account → its user
}

func newAccounts(pool *pgxpool.Pool, max int) *accounts {
	return &accounts{pool: pool, max: max, owners: make(map[int64]int64)}
}

// check refuses the request (403, code 1) unless every id is a preconf
// trading account of userID. The message does not say whether another
// user's account exists.
func (a *accounts) check(ctx context.Context, userID int64, ids ...int64) error {
	var unknown []int64
	a.mu.RLock()
	for _, id := range ids {
		owner, ok := a.owners[id]
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		if owner != userID {
			a.mu.RUnlock()
			return notYours(id)
		}
	}
	a.mu.RUnlock()
	if len(unknown) == 0 {
		return nil
	}
	found, err := a.read(ctx, unknown)
	if err != nil {
		return err
	}
	for _, id := range unknown {
		if owner, ok := found[id]; !ok || owner != userID {
			return notYours(id)
		}
	}
	return nil
}

// read returns the owners of those ids that are preconf trading accounts
// and remembers them.
func (a *accounts) read(ctx context.Context, ids []int64) (map[int64]int64, error) {
	rows, err := a.pool.Query(ctx, `SELECT account_id, user_id FROM accounts
		WHERE account_id = ANY($1) AND type = $2 AND user_id IS NOT NULL`, ids, users.AccountPreconf)
	if err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	defer rows.Close()
	found := make(map[int64]int64, len(ids))
	for rows.Next() {
		var id, owner int64
		if err := rows.Scan(&id, &owner); err != nil {
			return nil, fmt.Errorf("read accounts: %w", err)
		}
		found[id] = owner
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	a.mu.Lock()
	if len(a.owners)+len(found) > a.max {
		a.owners = make(map[int64]int64)
	}
	for id, owner := range found {
		a.owners[id] = owner
	}
	a.mu.Unlock()
	return found, nil
}

func notYours(id int64) error {
	return httpx.Forbidden(fmt.Sprintf("account %d is not your preconf trading account", id))
}
