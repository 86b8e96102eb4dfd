package validators

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/ingress/internal/clock"
	"blockspace.exchange/platform/environment"
)

// Duties is where proposer duties come from: a beacon node or the dev
// beacon.
type Duties interface {
	ProposerDuties(ctx context.Context, epoch uint64) ([]beacon.Duty, error)
}

// Sellers tells the slot clock who sells a slot: the user who registered
// the slot's proposer. Duties are asked once per epoch; a failed epoch is
// asked again after retryAfter.
type Sellers struct {
	pool       *pgxpool.Pool
	duties     Duties
	retryAfter time.Duration

	mu     sync.Mutex
	epochs map[uint64]epochDuties
}

type epochDuties struct {
	bySlot map[uint64]string // slot → pubkey
	err    error
	at     time.Time
}

// NewSellers returns the clock's source of sellers.
func NewSellers(pool *pgxpool.Pool, duties Duties) *Sellers {
	return &Sellers{pool: pool, duties: duties, retryAfter: 2 * time.Second, epochs: make(map[uint64]epochDuties)}
}

// Seller implements clock.Sellers. The seller's fees are the regular user
// class's fee schedule; its collateral per slot is the user's current one.
func (s *Sellers) Seller(ctx context.Context, slot uint64) (clock.Seller, bool, error) {
	pubkey, err := s.proposer(ctx, slot)
	if err != nil || pubkey == "" {
		return clock.Seller{}, false, err
	}
	var out clock.Seller
	err = s.pool.QueryRow(ctx, `
		SELECT v.user_id, a.account_id, u.collateral_per_slot::text, v.validator_type,
		       f.buy_fee_rate::text, f.primary_sell_fee_rate::text, f.secondary_sell_fee_rate::text
		FROM validators v
		JOIN users u ON u.user_id = v.user_id
		JOIN accounts a ON a.user_id = v.user_id AND a.type = 2
		JOIN fee_schedules f ON f.user_class = 1
		WHERE v.pubkey = $1`, pubkey).Scan(&out.UserID, &out.AccountID, &out.CollateralPerSlot, &out.ValidatorType,
		&out.Fees.Buy, &out.Fees.PrimarySell, &out.Fees.SecondarySell)
	if errors.Is(err, pgx.ErrNoRows) {
		return clock.Seller{}, false, nil
	}
	if err != nil {
		return clock.Seller{}, false, fmt.Errorf("read seller of slot %d: %w", slot, err)
	}
	out.Pubkey = pubkey
	return out, true, nil
}

// proposer returns the pubkey proposing slot, "" when the epoch has no
// duty for it.
func (s *Sellers) proposer(ctx context.Context, slot uint64) (string, error) {
	epoch := slot / environment.SlotsPerEpoch
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.epochs[epoch]
	if !ok || (e.err != nil && time.Since(e.at) >= s.retryAfter) || (e.err == nil && len(e.bySlot) == 0 && time.Since(e.at) >= s.retryAfter) {
		e = s.fetch(ctx, epoch)
		s.epochs[epoch] = e
		for old := range s.epochs {
			if old+8 < epoch {
				delete(s.epochs, old)
			}
		}
	}
	if e.err != nil {
		return "", e.err
	}
	return e.bySlot[slot], nil
}

func (s *Sellers) fetch(ctx context.Context, epoch uint64) epochDuties {
	duties, err := s.duties.ProposerDuties(ctx, epoch)
	e := epochDuties{bySlot: make(map[uint64]string, len(duties)), err: err, at: time.Now()}
	for _, d := range duties {
		e.bySlot[d.Slot] = d.Pubkey
	}
	return e
}
