package topics

import (
	"fmt"
	"strconv"
	"time"
)

// AccountEventVersion is the payload version of the account feed on
// AccountEvents: account.balance_changed, account.transaction_posted and
// account.position_changed.
//
// The feed is derived data for live views, published by the settler after
// each committed batch and at least once: a record may come again (after a
// crash between commit and publish), always with the same id and the same
// content. Ids:
//
//   - account.transaction_posted: "posting:<trxId>", one per posting;
//   - account.balance_changed: "balance:<accountId>:<tokenId>:<version>";
//   - account.position_changed: "position:<accountId>:<instrumentId>:<version>".
//
// Version is the feed version of the settler batch that produced the
// state: it increases with every batch that changes the balance or
// position (not by one), so a reader keeps, per balance or position, the
// state of the highest version it has seen and drops the others.
const AccountEventVersion = 1

// BalanceChanged is the payload of account.balance_changed: one token
// balance of an account after a settler batch changed it. Amounts are
// exact decimal strings in token units.
type BalanceChanged struct {
	UserID    int64  `json:"userId"`
	AccountID int64  `json:"accountId"`
	TokenID   int64  `json:"tokenId"`
	Quantity  string `json:"quantity"`
	Locked    string `json:"locked"`
	// Available is Quantity − Locked.
	Available string `json:"available"`
	Version   int64  `json:"version"`
}

// ID is the envelope id of the balance state.
func (b BalanceChanged) ID() string {
	return "balance:" + strconv.FormatInt(b.AccountID, 10) + ":" + strconv.FormatInt(b.TokenID, 10) + ":" + strconv.FormatInt(b.Version, 10)
}

// TransactionPosted is the payload of account.transaction_posted: one
// posting of the ledger on a user's account, the interface's
// AccountTransaction.
type TransactionPosted struct {
	UserID    int64 `json:"userId"`
	AccountID int64 `json:"accountId"`
	TokenID   int64 `json:"tokenId"`
	// TrxID is the posting id, the interface's trxId.
	TrxID int64 `json:"trxId"`
	// Type is the account transaction type (docs/api.md "Values and
	// identifiers"): 1 buy, 2 sell,
	// 6 transfer in, 7 transfer out, 8 deposit, 9 withdrawal, 14
	// withdrawal fee, 15 trading fee.
	Type int `json:"type"`
	// Amount is signed; Balance is the account's quantity of the token
	// after it.
	Amount  string `json:"amount"`
	Balance string `json:"balance"`
	// CreateDate is UNIX milliseconds: the time of the command or event
	// that posted it.
	CreateDate int64 `json:"createDate"`
}

// ID is the envelope id of the posting.
func (p TransactionPosted) ID() string { return "posting:" + strconv.FormatInt(p.TrxID, 10) }

// PositionChanged is the payload of account.position_changed: what an
// account holds in one market after a settler batch changed it.
type PositionChanged struct {
	UserID       int64  `json:"userId"`
	AccountID    int64  `json:"accountId"`
	InstrumentID string `json:"instrumentId"`
	MarketID     int64  `json:"marketId"`
	Slot         uint64 `json:"slot"`
	// Quantity is 0 or 1 for a whole block, gas units for inclusion
	// preconf; Locked backs open sell orders; Available = Quantity − Locked.
	Quantity  string `json:"quantity"`
	Locked    string `json:"locked"`
	Available string `json:"available"`
	// AveragePrice is the value-weighted price of what the account bought
	// in the market, empty when it bought nothing (a seller's issued
	// holding).
	AveragePrice string `json:"averagePrice,omitempty"`
	// Expired is set once the market's trading closed.
	Expired bool `json:"expired"`
	// UpdateDate is UNIX milliseconds: the time of the latest record that
	// changed the position.
	UpdateDate int64 `json:"updateDate"`
	Version    int64 `json:"version"`
}

// ID is the envelope id of the position state.
func (p PositionChanged) ID() string {
	return "position:" + strconv.FormatInt(p.AccountID, 10) + ":" + p.InstrumentID + ":" + strconv.FormatInt(p.Version, 10)
}

// AccountEnvelope wraps an account feed payload (BalanceChanged,
// TransactionPosted or PositionChanged) with its type and id.
func AccountEnvelope(at time.Time, payload any) (Envelope, error) {
	switch p := payload.(type) {
	case BalanceChanged:
		return NewEnvelope(TypeBalanceChanged, AccountEventVersion, p.ID(), at, p)
	case TransactionPosted:
		return NewEnvelope(TypeTransactionPosted, AccountEventVersion, p.ID(), at, p)
	case PositionChanged:
		return NewEnvelope(TypePositionChanged, AccountEventVersion, p.ID(), at, p)
	}
	return Envelope{}, fmt.Errorf("account envelope: %T is not an account feed payload", payload)
}

// DecodeBalanceChanged returns the payload of an account.balance_changed
// envelope.
func DecodeBalanceChanged(e Envelope) (BalanceChanged, error) {
	var b BalanceChanged
	err := decodeVersioned(e, TypeBalanceChanged, AccountEventVersion, &b)
	return b, err
}

// DecodeTransactionPosted returns the payload of an
// account.transaction_posted envelope.
func DecodeTransactionPosted(e Envelope) (TransactionPosted, error) {
	var p TransactionPosted
	err := decodeVersioned(e, TypeTransactionPosted, AccountEventVersion, &p)
	return p, err
}

// DecodePositionChanged returns the payload of an account.position_changed
// envelope.
func DecodePositionChanged(e Envelope) (PositionChanged, error) {
	var p PositionChanged
	err := decodeVersioned(e, TypePositionChanged, AccountEventVersion, &p)
	return p, err
}
