// Package validators serves the caller's registered validators.
package validators

import (
	"context"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
)

// Validator is one registration as listed.
type Validator struct {
	Pubkey         string `json:"pubkey"`
	ValidatorIndex int64  `json:"validatorIndex"`
	ValidatorType  int    `json:"validatorType"`
	RegisterDate   int64  `json:"registerDate"` // epoch milliseconds
}

// Register mounts GET /api/v1/validator/list behind the bearer check.
func Register(r gin.IRouter, pool *pgxpool.Pool, bearer gin.HandlerFunc, needs ...gin.HandlerFunc) {
	r.GET("/api/v1/validator/list", append(append(needs, bearer), func(c *gin.Context) {
		list, err := List(c, pool, auth.FromContext(c).User.UserID)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		httpx.OK(c, gin.H{"validators": list})
	})...)
}

// List reads the validators registered by userID, oldest first.
func List(ctx context.Context, pool *pgxpool.Pool, userID int64) ([]Validator, error) {
	rows, err := pool.Query(ctx, `
		SELECT pubkey, validator_index, validator_type, registered_at
		FROM validators WHERE user_id = $1 ORDER BY registered_at, pubkey`, userID)
	if err != nil {
		return nil, fmt.Errorf("list validators: %w", err)
	}
	defer rows.Close()
	out := []Validator{}
	for rows.Next() {
		var v Validator
		var at time.Time
		if err := rows.Scan(&v.Pubkey, &v.ValidatorIndex, &v.ValidatorType, &at); err != nil {
			return nil, fmt.Errorf("list validators: %w", err)
		}
		v.RegisterDate = at.UnixMilli()
		out = append(out, v)
	}
	return out, rows.Err()
}
