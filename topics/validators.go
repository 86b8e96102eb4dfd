package topics

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ValidatorEventVersion is the payload version of the records on
// Validators.
const ValidatorEventVersion = 1

// ValidatorRegistered is the payload of validator.registered and
// validator.deregistered: a user registered a validator as theirs, so the
// slots it proposes can be sold, or removed that registration.
type ValidatorRegistered struct {
	// Pubkey is the validator's BLS public key, lower-case 0x hex: the
	// record's key.
	Pubkey string `json:"pubkey"`
	UserID int64  `json:"userId"`
	// Address is the user's wallet, lower-case 0x hex.
	Address        string `json:"address"`
	ValidatorIndex uint64 `json:"validatorIndex"`
	// ValidatorType is 0 for a normal validator, 1 for an SSV validator.
	ValidatorType int `json:"validatorType"`
	// At is when the registration was stored (registered) or removed
	// (deregistered), UNIX milliseconds; with Pubkey it makes the id.
	At int64 `json:"at"`
}

// ID is the envelope id: one registration or removal of one key at one
// instant ("registered:<pubkey>:<at>" or "deregistered:…"), so a
// republished record is recognisable as the same event.
func (v ValidatorRegistered) ID(typ string) string {
	return strings.TrimPrefix(typ, "validator.") + ":" + v.Pubkey + ":" + strconv.FormatInt(v.At, 10)
}

// Envelope wraps the payload as typ, TypeValidatorRegistered or
// TypeValidatorDeregistered.
func (v ValidatorRegistered) Envelope(typ string) (Envelope, error) {
	if typ != TypeValidatorRegistered && typ != TypeValidatorDeregistered {
		return Envelope{}, fmt.Errorf("validator envelope: %q is not a registration type", typ)
	}
	return NewEnvelope(typ, ValidatorEventVersion, v.ID(typ), time.UnixMilli(v.At), v)
}

// ProposerDuty is the payload of validator.proposer_duty: the beacon chain
// assigned Slot to a registered validator, whose user sells the slot's
// markets. The slot clock writes it when it opens the slot's first market.
type ProposerDuty struct {
	Slot   uint64 `json:"slot"`
	Epoch  uint64 `json:"epoch"`
	Pubkey string `json:"pubkey"`
	// UserID registered the validator; AccountID is its preconf trading
	// account, the seller of the slot's markets.
	UserID    int64 `json:"userId"`
	AccountID int64 `json:"accountId"`
}

// ID depends only on the slot, so clock replicas that both write the duty
// produce duplicates a reader drops.
func (d ProposerDuty) ID() string {
	return "proposer_duty:" + strconv.FormatUint(d.Slot, 10)
}

// Envelope wraps the duty; at is when the clock opened the slot's market.
func (d ProposerDuty) Envelope(at time.Time) (Envelope, error) {
	return NewEnvelope(TypeProposerDuty, ValidatorEventVersion, d.ID(), at, d)
}

// DecodeValidatorRegistered returns the payload of a validator.registered or
// validator.deregistered envelope.
func DecodeValidatorRegistered(e Envelope) (ValidatorRegistered, error) {
	var v ValidatorRegistered
	if e.Type != TypeValidatorDeregistered {
		return v, decodeVersioned(e, TypeValidatorRegistered, ValidatorEventVersion, &v)
	}
	return v, decodeVersioned(e, TypeValidatorDeregistered, ValidatorEventVersion, &v)
}

// DecodeProposerDuty returns the payload of a validator.proposer_duty
// envelope.
func DecodeProposerDuty(e Envelope) (ProposerDuty, error) {
	var d ProposerDuty
	return d, decodeVersioned(e, TypeProposerDuty, ValidatorEventVersion, &d)
}
