package trading

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/httpx"
)

// Position is the WholeBlockPosition resource of interface.md, with the
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
