package validators

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/httpx"
)

func readBody(c *gin.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, httpx.Invalid("request body exceeds the limit of %d bytes", tooBig.Limit)
		}
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// ownerOf returns the user that registered pubkey, or 0.
func ownerOf(ctx context.Context, pool *pgxpool.Pool, pubkey string) (int64, error) {
	var user int64
	err := pool.QueryRow(ctx, `SELECT user_id FROM validators WHERE pubkey = $1`, pubkey).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read validator: %w", err)
	}
	return user, nil
}

// insert stores a registration; false when the key is registered already.
func insert(ctx context.Context, pool *pgxpool.Pool, userID int64, it parsed, index uint64) (bool, error) {
	tag, err := pool.Exec(ctx, `
		INSERT INTO validators (pubkey, user_id, validator_index, validator_type, signature)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (pubkey) DO NOTHING`,
		it.Pubkey, userID, int64(index), it.ValidatorType, "0x"+hex.EncodeToString(it.sig))
	if err != nil {
		return false, fmt.Errorf("insert validator: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// remove deletes the caller's registration of pubkey.
func remove(ctx context.Context, pool *pgxpool.Pool, userID int64, pubkey string) (bool, error) {
	tag, err := pool.Exec(ctx, `DELETE FROM validators WHERE pubkey = $1 AND user_id = $2`, pubkey, userID)
	if err != nil {
		return false, fmt.Errorf("delete validator: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
