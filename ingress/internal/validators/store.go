package validators

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/outbox"
	"blockspace.exchange/topics"
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

// Insert stores a registration and, in the same transaction, the outbox
// row of its validator.registered record; ok is false when the key is
// registered already. The caller publishes p after commit, or leaves it to
// the outbox relay.
func Insert(ctx context.Context, pool *pgxpool.Pool, reg topics.ValidatorRegistered, sig []byte) (p outbox.Pending, ok bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var at time.Time
		err := tx.QueryRow(ctx, `
			INSERT INTO validators (pubkey, user_id, validator_index, validator_type, signature)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (pubkey) DO NOTHING RETURNING registered_at`,
			reg.Pubkey, reg.UserID, int64(reg.ValidatorIndex), reg.ValidatorType, "0x"+hex.EncodeToString(sig)).Scan(&at)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("insert validator: %w", err)
		}
		reg.At, ok = at.UnixMilli(), true
		p, err = enqueue(ctx, tx, topics.TypeValidatorRegistered, reg)
		return err
	})
	return p, ok, err
}

// remove deletes the caller's registration of pubkey and enqueues its
// validator.deregistered record; ok is false when the caller had none.
func remove(ctx context.Context, pool *pgxpool.Pool, userID int64, address, pubkey string) (p outbox.Pending, ok bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		reg := topics.ValidatorRegistered{Pubkey: pubkey, UserID: userID, Address: address}
		var index int64
		err := tx.QueryRow(ctx, `
			DELETE FROM validators WHERE pubkey = $1 AND user_id = $2
			RETURNING validator_index, validator_type, (extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
			pubkey, userID).Scan(&index, &reg.ValidatorType, &reg.At)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete validator: %w", err)
		}
		reg.ValidatorIndex, ok = uint64(index), true
		p, err = enqueue(ctx, tx, topics.TypeValidatorDeregistered, reg)
		return err
	})
	return p, ok, err
}

// enqueue writes the record of a registration change to the outbox.
func enqueue(ctx context.Context, tx pgx.Tx, typ string, reg topics.ValidatorRegistered) (outbox.Pending, error) {
	e, err := reg.Envelope(typ)
	if err != nil {
		return outbox.Pending{}, err
	}
	r, err := kafka.NewRecord(topics.Validators, []byte(reg.Pubkey), e)
	if err != nil {
		return outbox.Pending{}, err
	}
	return outbox.Enqueue(ctx, tx, r)
}
