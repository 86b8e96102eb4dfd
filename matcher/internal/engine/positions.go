package engine

// positionKey names one account's position in one market of the slot.
type positionKey struct {
	account int64
	family  family
}

// position is what an account holds in a market of the slot: qty units, of
// which locked back its resting sell orders.
type position struct {
	qty, locked int64
}

func (p *position) free() int64 { return p.qty - p.locked }

// position returns the account's position, creating an empty one.
func (s *slot) position(account int64, f family) *position {
	k := positionKey{account, f}
	p := s.positions[k]
	if p == nil {
		p = &position{}
		s.positions[k] = p
	}
	return p
}

// availablePreconf is the preconf gas that goes with the whole block: the
// block holder's unlocked inclusion-preconf position. Gas sold or offered
// in the inclusion-preconf market is no longer part of it.
func (s *slot) availablePreconf() int64 {
	if s.positions == nil || s.holder == 0 {
		return 0
	}
	p := s.positions[positionKey{s.holder, inclusionPreconf}]
	if p == nil {
		return 0
	}
	return p.free()
}
