// Package ledger is the double-entry ledger of the exchange: it turns
// ledger commands and funding events into balanced journal entries in
// Postgres, a whole batch at a time, each command exactly once.
package ledger

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// Account transaction types (docs/api.md "Values and identifiers").
const (
	TypeBuy           = 1
	TypeSell          = 2
	TypeTransferIn    = 6
	TypeTransferOut   = 7
	TypeDeposit       = 8
	TypeWithdrawal    = 9
	TypeWithdrawalFee = 14
	TypeTradingFee    = 15
)

// System account types (migration 0003): accounts without a user.
const (
	SystemCustody  = 101 // minus what the collateral contract holds for users
	SystemFees     = 102 // fees earned
	SystemInFlight = 103 // withdrawals debited and not yet paid on chain
)

// Withdraw request statuses (docs/api.md "Values and identifiers").
const (
	WithdrawAccepted  = 0
	WithdrawDebited   = 1
	WithdrawSubmitted = 2
	WithdrawSuccess   = 10
	WithdrawFailed    = 104
)

// Command is one decoded ledger command or funding event. Exactly one of
// the payload pointers is set, according to Type.
type Command struct {
	ID   string // envelope id, the deduplication key
	Type string // envelope type
	At   time.Time

	Transfer  *topics.LedgerTransfer
	Withdraw  *topics.LedgerWithdraw
	Deposit   *topics.DepositObserved
	Submitted *topics.WithdrawalSubmitted
	Confirmed *topics.WithdrawalConfirmed
	Failed    *topics.WithdrawalFailed
}

// Decode turns an envelope into a command. An error means the record can
// never be applied (unknown type, bad payload); the caller records it as
// rejected rather than retrying it forever.
func Decode(e topics.Envelope) (Command, error) {
	c := Command{ID: e.ID, Type: e.Type, At: e.At()}
	var err error
	switch e.Type {
	case topics.TypeLedgerTransfer:
		c.Transfer = new(topics.LedgerTransfer)
		err = topics.DecodeFunding(e, e.Type, c.Transfer)
	case topics.TypeLedgerWithdraw:
		c.Withdraw = new(topics.LedgerWithdraw)
		err = topics.DecodeFunding(e, e.Type, c.Withdraw)
	case topics.TypeDepositObserved:
		c.Deposit = new(topics.DepositObserved)
		err = topics.DecodeFunding(e, e.Type, c.Deposit)
	case topics.TypeWithdrawalSubmitted:
		c.Submitted = new(topics.WithdrawalSubmitted)
		err = topics.DecodeFunding(e, e.Type, c.Submitted)
	case topics.TypeWithdrawalConfirmed:
		c.Confirmed = new(topics.WithdrawalConfirmed)
		err = topics.DecodeFunding(e, e.Type, c.Confirmed)
	case topics.TypeWithdrawalFailed:
		c.Failed = new(topics.WithdrawalFailed)
		err = topics.DecodeFunding(e, e.Type, c.Failed)
	default:
		err = fmt.Errorf("settler does not apply %q", e.Type)
	}
	if err == nil && topics.HasNUL(e.Data) {
		// Its strings (reasons, hashes, addresses) are stored as text,
		// which refuses NUL: the batch would fail at every retry.
		err = fmt.Errorf("decode %s: a string holds a NUL character, which Postgres does not store", e.Type)
	}
	return c, err
}

// positive parses a strictly positive decimal amount.
func positive(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("amount %q is not a decimal", s)
	}
	if !d.IsPositive() {
		return decimal.Decimal{}, fmt.Errorf("amount %s is not positive", s)
	}
	return d, nil
}
