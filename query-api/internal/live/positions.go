package live

import (
	"context"

	"blockspace.exchange/query-api/internal/tradingreads"
)

// PositionReader reads a user's positions for the positions query; the
// REST read of one's own positions is the same reader.
type PositionReader interface {
	OwnPositions(ctx context.Context, userID int64, q tradingreads.PositionQuery) ([]tradingreads.OwnPosition, error)
}

// maxPositions bounds one answer; a user holds few live positions.
const maxPositions = 500
