package topics

import (
	"strconv"
	"time"
)

// FundingVersion is the payload version of the ledger commands
// (ledger.transfer, ledger.withdraw) and of the funding events
// (funding.deposit_observed, funding.withdrawal_*).
//
// Amounts are decimal strings in token units (1.5 = one and a half ETH),
// never floats. The envelope id is the command id the settler deduplicates
// on: "transfer-<transferId>", "withdraw-<requestId>",
// "deposit-<chainId>-<txHash>-<logIndex>" (the dev chain, new at every
// start, adds its incarnation after the chain id), "withdrawal-submitted-<requestId>",
// "withdrawal-confirmed-<requestId>" and "withdrawal-failed-<requestId>".
const FundingVersion = 1

// LedgerTransfer is the payload of a TypeLedgerTransfer command: move
// Quantity of a token between two accounts of one user. Ingress has
// already locked Quantity in the source account.
type LedgerTransfer struct {
	TransferID    int64  `json:"transferId"`
	UserID        int64  `json:"userId"`
	FromAccountID int64  `json:"fromAccountId"`
	ToAccountID   int64  `json:"toAccountId"`
	TokenID       int64  `json:"tokenId"`
	Quantity      string `json:"quantity"`
}

// LedgerWithdraw is the payload of a TypeLedgerWithdraw command: debit an
// accepted withdrawal request. Ingress has already locked Quantity + Fee.
type LedgerWithdraw struct {
	RequestID int64  `json:"requestId"`
	UserID    int64  `json:"userId"`
	AccountID int64  `json:"accountId"`
	TokenID   int64  `json:"tokenId"`
	ChainID   int64  `json:"chainId"`
	Quantity  string `json:"quantity"`
	Fee       string `json:"fee"`
	// ToAddress receives the payout on chain (lower-case 0x hex).
	ToAddress string `json:"toAddress"`
}

// DepositObserved is the payload of a TypeDepositObserved event: a Deposit
// log of the collateral contract with the required confirmations.
type DepositObserved struct {
	ChainID          int64  `json:"chainId"`
	Contract         string `json:"contract"`
	BlockNumber      uint64 `json:"blockNumber"`
	BlockHash        string `json:"blockHash"`
	TransactionIndex uint   `json:"transactionIndex"`
	TransactionHash  string `json:"transactionHash"`
	LogIndex         uint   `json:"logIndex"`
	// Sender paid; Depositor is credited (lower-case 0x hex).
	Sender    string `json:"sender"`
	Depositor string `json:"depositor"`
	TokenID   int64  `json:"tokenId"`
	// Quantity in token units; AmountWei the raw on-chain amount.
	Quantity  string `json:"quantity"`
	AmountWei string `json:"amountWei"`
}

// WithdrawalSubmitted is the payload of a TypeWithdrawalSubmitted event.
type WithdrawalSubmitted struct {
	RequestID int64  `json:"requestId"`
	UserID    int64  `json:"userId"`
	TxHash    string `json:"txHash"`
}

// WithdrawalConfirmed is the payload of a TypeWithdrawalConfirmed event:
// the payout is final; the in-flight amount leaves custody.
type WithdrawalConfirmed struct {
	RequestID   int64  `json:"requestId"`
	UserID      int64  `json:"userId"`
	TxHash      string `json:"txHash"`
	BlockNumber uint64 `json:"blockNumber"`
}

// WithdrawalFailed is the payload of a TypeWithdrawalFailed event: the
// payout reverted or could not be sent; quantity and fee go back to the
// user's account.
type WithdrawalFailed struct {
	RequestID int64  `json:"requestId"`
	UserID    int64  `json:"userId"`
	TxHash    string `json:"txHash,omitempty"`
	Reason    string `json:"reason"`
}

// UserKey is the record key of the per-user topics (ledger-commands,
// account-events): the user id as a decimal string.
func UserKey(userID int64) []byte { return strconv.AppendInt(nil, userID, 10) }

// FundingEnvelope wraps a ledger command or funding event payload.
func FundingEnvelope(typ, id string, at time.Time, payload any) (Envelope, error) {
	return NewEnvelope(typ, FundingVersion, id, at, payload)
}

// DecodeFunding decodes the payload of a ledger command or funding event
// envelope of type typ into v, refusing other types and versions.
func DecodeFunding(e Envelope, typ string, v any) error {
	return decodeVersioned(e, typ, FundingVersion, v)
}
