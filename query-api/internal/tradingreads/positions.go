package tradingreads

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/auth"
	"blockspace.exchange/platform/httpx"
	"blockspace.exchange/topics"
)

// Position is the WholeBlockPosition resource of the interface (docs/api.md
// "Orders, trades and positions"), with the
// instrument added, and the InclusionPreconfPosition of the same shape
// whose quantities are gas units. It never names its holder.
type Position struct {
	InstrumentID string          `json:"instrumentId"`
	Slot         int64           `json:"slot"`
	Quantity     decimal.Decimal `json:"quantity"`
	Available    decimal.Decimal `json:"available"` // quantity − locked
	Locked       decimal.Decimal `json:"locked"`    // backs open sell orders
	Expired      bool            `json:"expired"`
	// AveragePrice is the holder's cost-weighted buy price; null for what
	// it was issued (the slot's seller) and never bought.
	AveragePrice decimal.NullDecimal `json:"averagePrice"`
	UpdateDate   int64               `json:"updateDate"`
}

const positionColumns = `p.instrument_id, p.slot, p.quantity, p.locked, p.expired, p.average_price, p.update_date`

// marketPositionsSQL reads one market's holders through
// positions_instrument, largest first.
const marketPositionsSQL = `SELECT ` + positionColumns + ` FROM positions p
	WHERE p.instrument_id = $1 AND p.quantity > 0
	ORDER BY p.quantity DESC, p.account_id LIMIT $2`

// familyPositionsSQL reads a family's holders newest market first,
// backwards through positions_market; each market's holders are sorted
// as the scan reaches them.
const familyPositionsSQL = `SELECT ` + positionColumns + ` FROM positions p
	WHERE p.market_id BETWEEN $1 AND $2 AND p.quantity > 0
	ORDER BY p.market_id DESC, p.quantity DESC, p.account_id LIMIT $3`

// publicPositions lists the positions held in one market (instrumentId)
// or in every market of the family: newest market first, largest holding
// first within a market. Emptied positions (quantity 0) are left out.
func (r *Reads) publicPositions(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		instrument, err := parseInstrument(c, fam, false)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		limit, err := parseLimit(c)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		var rows pgx.Rows
		if instrument != "" {
			rows, _ = r.pool.Query(c, marketPositionsSQL, instrument, limit)
		} else {
			rows, _ = r.pool.Query(c, familyPositionsSQL, fam.minMarket, fam.maxMarket, limit)
		}
		positions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Position, error) {
			var p Position
			var updated time.Time
			err := row.Scan(&p.InstrumentID, &p.Slot, &p.Quantity, &p.Locked, &p.Expired, &p.AveragePrice, &updated)
			p.Available = p.Quantity.Sub(p.Locked)
			p.UpdateDate = updated.UnixMilli()
			return p, err
		})
		if err != nil {
			httpx.Fail(c, fmt.Errorf("read positions: %w", err))
			return
		}
		httpx.OK(c, gin.H{"positions": positions})
	}
}

// OwnPosition is a position of the caller: the listed position with the
// account that holds it and its market. Emptied positions (quantity 0)
// are kept: they still carry what the account paid.
type OwnPosition struct {
	AccountID int64 `json:"accountId"`
	MarketID  int64 `json:"marketId"`
	Position
}

// PositionQuery selects positions of one user.
type PositionQuery struct {
	Family     topics.Family // "" for both families
	Instrument string        // "" for every instrument of the family
	StartSlot  int64         // positions in this slot or earlier; 0 from the newest
	Limit      int
}

// ownPositionsSQL reads a user's positions newest slot first and, in a
// slot, whole block before inclusion preconf. A page holds whole slots:
// the inner query finds the oldest slot of the first Limit positions and
// the outer one reads every position down to it, so the next page can
// start at the slot before the last one seen. Arguments: user, lowest and
// highest market id, instrument ("" for all), start slot, limit.
const ownPositionsSQL = `WITH mine AS (
		SELECT p.account_id, p.instrument_id, p.market_id, p.slot, p.quantity, p.locked, p.expired, p.average_price, p.update_date
		FROM positions p JOIN accounts a ON a.account_id = p.account_id
		WHERE a.user_id = $1 AND p.market_id BETWEEN $2 AND $3 AND ($4 = '' OR p.instrument_id = $4) AND p.slot <= $5)
	SELECT p.account_id, p.market_id, ` + positionColumns + ` FROM mine p
	WHERE p.slot >= (SELECT min(slot) FROM (SELECT slot FROM mine ORDER BY slot DESC LIMIT $6) page)
	ORDER BY p.slot DESC, p.market_id DESC, p.account_id`

// OwnPositions reads the positions of userID that q selects; it serves
// the REST read and the WebSocket's positions query alike.
func (r *Reads) OwnPositions(ctx context.Context, userID int64, q PositionQuery) ([]OwnPosition, error) {
	lo, hi := int64(0), int64(math.MaxInt64)
	if q.Family != "" {
		fam := newFamily(q.Family)
		lo, hi = fam.minMarket, fam.maxMarket
	}
	start := q.StartSlot
	if start == 0 {
		start = math.MaxInt64
	}
	rows, _ := r.pool.Query(ctx, ownPositionsSQL, userID, lo, hi, q.Instrument, start, q.Limit)
	positions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OwnPosition, error) {
		var p OwnPosition
		var updated time.Time
		err := row.Scan(&p.AccountID, &p.MarketID, &p.InstrumentID, &p.Slot, &p.Quantity, &p.Locked, &p.Expired,
			&p.AveragePrice, &updated)
		p.Available = p.Quantity.Sub(p.Locked)
		p.UpdateDate = updated.UnixMilli()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read own positions: %w", err)
	}
	return positions, nil
}

// ownPositions lists the caller's positions of the family across its
// accounts, newest slot first, a page of whole slots.
func (r *Reads) ownPositions(fam family) gin.HandlerFunc {
	return func(c *gin.Context) {
		q := PositionQuery{Family: fam.name}
		var err error
		if q.Instrument, err = parseInstrument(c, fam, false); err != nil {
			httpx.Fail(c, err)
			return
		}
		if q.StartSlot, err = httpx.QueryInt64(c, "startSlot", false, 0, 0, maxSlot); err != nil {
			httpx.Fail(c, err)
			return
		}
		if q.Limit, err = parseLimit(c); err != nil {
			httpx.Fail(c, err)
			return
		}
		positions, err := r.OwnPositions(c, auth.FromContext(c).User.UserID, q)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		httpx.OK(c, gin.H{"positions": positions})
	}
}
