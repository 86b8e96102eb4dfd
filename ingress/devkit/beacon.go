package devkit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/internal/beacon"
	"blockspace.exchange/platform/environment"
)

// Beacon is the dev stack's beacon chain: every well-formed key is a known
// validator, and the slots of an epoch go round-robin to the validators
// registered with the exchange when the epoch is first asked for (sorted
// by public key, slot s to validator s mod n). Like a real chain, an
// epoch's duties never change once given out, so a market's seller does
// not change when a validator registers later.
type Beacon struct {
	pool *pgxpool.Pool

	mu     sync.Mutex
	epochs map[uint64][]beacon.Duty
}

var _ ingress.Beacon = (*Beacon)(nil)

// NewBeacon returns the dev beacon over the exchange's validators table.
func NewBeacon(pool *pgxpool.Pool) *Beacon {
	return &Beacon{pool: pool, epochs: make(map[uint64][]beacon.Duty)}
}

// ProposerDuties returns the duties of epoch. An epoch asked for while no
// validator is registered has no duties and is asked again later.
func (d *Beacon) ProposerDuties(ctx context.Context, epoch uint64) ([]beacon.Duty, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if duties, ok := d.epochs[epoch]; ok {
		return duties, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT pubkey FROM validators ORDER BY pubkey`)
	if err != nil {
		return nil, fmt.Errorf("dev beacon: read validators: %w", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("dev beacon: read validators: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dev beacon: read validators: %w", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	duties := make([]beacon.Duty, 0, environment.SlotsPerEpoch)
	for i := range uint64(environment.SlotsPerEpoch) {
		slot := epoch*environment.SlotsPerEpoch + i
		k := keys[slot%uint64(len(keys))]
		duties = append(duties, beacon.Duty{Pubkey: k, ValidatorIndex: devIndex(k), Slot: slot})
	}
	d.epochs[epoch] = duties
	for e := range d.epochs {
		if e+4 < epoch {
			delete(d.epochs, e)
		}
	}
	return duties, nil
}

// Validator knows every key; its index is derived from the key.
func (d *Beacon) Validator(_ context.Context, pubkey string) (beacon.Validator, bool, error) {
	return beacon.Validator{Index: devIndex(pubkey), Status: "active_ongoing"}, true, nil
}

// devIndex is the dev chain's validator index of a key: the first 31 bits
// of its SHA-256.
func devIndex(pubkey string) uint64 {
	h := sha256.Sum256([]byte(pubkey))
	return uint64(binary.BigEndian.Uint32(h[:4]) >> 1)
}
