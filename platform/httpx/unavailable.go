package httpx

import (
	"context"
	"errors"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// isUnavailable reports whether err means a dependency could not be
// reached or did not answer in time, as opposed to a bug. Retrying such a
// request later can succeed, so the client is told 503 with Retry-After.
func isUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	var marked interface{ Unavailable() bool }
	if errors.As(err, &marked) && marked.Unavailable() {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 connection exceptions, 53 insufficient resources,
		// 57P0x operator intervention (shutdown, crash recovery).
		switch {
		case len(pgErr.Code) == 5 && (pgErr.Code[:2] == "08" || pgErr.Code[:2] == "53"):
			return true
		case pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03":
			return true
		}
		return false
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
