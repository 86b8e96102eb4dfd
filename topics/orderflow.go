package topics

import "time"

// OrderflowVersion is the payload version of the private-orderflow
// lifecycle and refund messages (orderflow.tx_status,
// orderflow.bundle_status, orderflow.refund); the submissions have
// OrderflowSubmissionVersion.
//
// Hashes and addresses are lower-case 0x hex; quantities inside a decoded
// transaction are 0x hex quantities as in Ethereum JSON-RPC; wei amounts
// outside it are decimal strings. Envelope ids: "tx-<hash>" for
// orderflow.tx (a transaction is published once), "obundle-<bundleHash>",
// "sbundle-<submissionId>", "bs-<bundleHash>-<status>-<partition>:<offset>"
// for what the forwarder decides, naming the orderflow-bundles record that
// caused it, so a replayed or duplicated event has the id of the first and
// a bundle sent again reaches a status again under a new id. Events the
// chain decides name the block they were learned from,
// so the same status reached again after a reorganisation is a new event:
// "txs-<hash>-<status>-<block>-<hash8>", "bs-<bundleHash>-<status>-<block>-<hash8>"
// and "rf-<txHash>-<bundleHash8>-<status>-<block>-<hash8>" (hash8: the
// first four bytes of a hash, in hex).
const OrderflowVersion = 1

// OrderflowSubmissionVersion is the payload version of the submissions:
// orderflow.tx, orderflow.originator_bundle and orderflow.searcher_bundle.
// Version 2 gives receivedAt in UNIX milliseconds, the unit of every
// other time of the log and of the tracking reads; version 1 gave UNIX
// nanoseconds, and is otherwise the same. Producers write version 2;
// readers read both, through SubmissionReceivedAt.
const OrderflowSubmissionVersion = 2

// SubmissionReceivedAt is the instant a submission's receivedAt names in
// payload version (1: nanoseconds, 2 and later: milliseconds).
func SubmissionReceivedAt(version int, receivedAt int64) time.Time {
	if version == 1 {
		return time.Unix(0, receivedAt)
	}
	return time.UnixMilli(receivedAt)
}

// Transaction lifecycle states (docs/orderflow.md "Tracking and refunds").
const (
	TxPending   = "PENDING"
	TxIncluded  = "INCLUDED"
	TxFailed    = "FAILED"
	TxCancelled = "CANCELLED"
	TxUnknown   = "UNKNOWN" // only in reads: a hash never seen
)

// Bundle lifecycle states. A bundle is RECEIVED when published, FORWARDED
// once sent to at least one builder, REPLACED when a later version of its
// replacement group arrived, and ends INCLUDED, FAILED or CANCELLED.
const (
	BundleReceived  = "RECEIVED"
	BundleForwarded = "FORWARDED"
	BundleReplaced  = "REPLACED"
	BundleIncluded  = "INCLUDED"
	BundleFailed    = "FAILED"
	BundleCancelled = "CANCELLED"
)

// Refund states: a liability is PENDING until the payout is sent (PAID,
// payoutTxHash set) and CONFIRMED once the payout is in a block. A
// PENDING refund whose block a reorganisation orphaned is withdrawn
// (ORPHANED, its last event): nothing is owed for it. A refund whose
// recipient refuses the payout (it reverts, or needs more gas than a
// payout spends) is FAILED with a reason: owed, unpaid, left to an
// operator.
const (
	RefundPending   = "PENDING"
	RefundPaid      = "PAID"
	RefundConfirmed = "CONFIRMED"
	RefundOrphaned  = "ORPHANED"
	RefundFailed    = "FAILED"
)

// AccessTuple is one entry of an EIP-2930 access list.
type AccessTuple struct {
	Address     string   `json:"address"`
	StorageKeys []string `json:"storageKeys"`
}

// Authorization is one EIP-7702 authorization of a set-code transaction,
// without its signature; Authority is the recovered signer ("" when it
// does not recover, which makes that authorization a no-op on chain).
type Authorization struct {
	ChainID   string `json:"chainId"`
	Address   string `json:"address"`
	Nonce     string `json:"nonce"`
	Authority string `json:"authority,omitempty"`
}

// DecodedTx is one signed transaction as searchers see it: every field of
// the transaction except the signature (no v, r, s, yParity), plus the
// recovered sender and the hash. It is the item of the searcher stream.
//
//topics:appendjson
type DecodedTx struct {
	ChainID string  `json:"chainId"`
	Type    string  `json:"type"`
	Hash    string  `json:"hash"`
	From    string  `json:"from"`
	To      *string `json:"to"` // null for a contract creation
	Nonce   string  `json:"nonce"`
	Value   string  `json:"value"`
	Gas     string  `json:"gas"`
	// GasPrice is set for legacy and access-list transactions,
	// MaxFeePerGas and MaxPriorityFeePerGas for the others.
	GasPrice             string          `json:"gasPrice,omitempty"`
	MaxFeePerGas         string          `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas string          `json:"maxPriorityFeePerGas,omitempty"`
	Data                 string          `json:"data"`
	AccessList           []AccessTuple   `json:"accessList"`
	MaxFeePerBlobGas     string          `json:"maxFeePerBlobGas,omitempty"`
	BlobVersionedHashes  []string        `json:"blobVersionedHashes,omitempty"`
	AuthorizationList    []Authorization `json:"authorizationList,omitempty"`
}

// RefundPolicy is what an originator is owed from backruns of its
// transactions: Percent (0 < p < 100) of what a backrun pays, to Recipient.
type RefundPolicy struct {
	Recipient string `json:"recipient"`
	Percent   int    `json:"percent"`
}

// OrderflowTx is the payload of TypeOrderflowTx: one originator
// transaction submitted alone (eth_sendRawTransaction,
// eth_sendPrivateRawTransaction, eth_sendPrivateTransaction). Key: Hash.
//
//topics:appendjson
type OrderflowTx struct {
	Hash string `json:"hash"`
	// Raw is the signed transaction as sent (0x hex), for builders.
	Raw string    `json:"raw"`
	Tx  DecodedTx `json:"tx"`
	// Originator is the address of the partner key that sent it; "" on the
	// open endpoint.
	Originator string       `json:"originator"`
	Refund     RefundPolicy `json:"refund"`
	Method     string       `json:"method"`
	// ReceivedAt is when ingress accepted it, UNIX milliseconds
	// (OrderflowSubmissionVersion).
	ReceivedAt int64 `json:"receivedAt"`
}

// BundleTx is one transaction of a bundle: the signed raw form and its
// decoding, or for a searcher backrun's leading element only the hash of
// the originator transaction it backruns (Raw and Tx empty).
type BundleTx struct {
	Hash string     `json:"hash"`
	Raw  string     `json:"raw,omitempty"`
	Tx   *DecodedTx `json:"tx,omitempty"`
}

// BundleTerms are the optional block and revert fields of a bundle.
type BundleTerms struct {
	BlockNumber       string   `json:"blockNumber,omitempty"`
	MinTimestamp      int64    `json:"minTimestamp,omitempty"`
	MaxTimestamp      int64    `json:"maxTimestamp,omitempty"`
	RevertingTxHashes []string `json:"revertingTxHashes,omitempty"`
}

// OrderflowOriginatorBundle is the payload of
// TypeOrderflowOriginatorBundle: an ordered bundle from an originator.
// Key: BundleHash, or "<originator>/<replacementUuid>" when the bundle
// belongs to a replacement group (partner originators only), so that the
// versions of a group keep their order on one partition and the latest
// wins, as a searcher's do.
type OrderflowOriginatorBundle struct {
	BundleHash      string       `json:"bundleHash"`
	Txs             []BundleTx   `json:"txs"`
	Terms           BundleTerms  `json:"terms"`
	ReplacementUUID string       `json:"replacementUuid,omitempty"`
	Originator      string       `json:"originator"`
	Refund          RefundPolicy `json:"refund"`
	ReceivedAt      int64        `json:"receivedAt"` // UNIX milliseconds
}

// OrderflowSearcherBundle is the payload of TypeOrderflowSearcherBundle:
// a searcher's bundle, its replacement, or (Cancel) the cancellation of a
// replacement group. Key: "<searcher>/<replacementUuid>" when the bundle
// belongs to a replacement group, so that the versions of a group keep
// their order on one partition and the latest wins; else BundleHash.
type OrderflowSearcherBundle struct {
	SubmissionID    string      `json:"submissionId"`
	BundleHash      string      `json:"bundleHash"` // "" for a cancellation
	Searcher        string      `json:"searcher"`
	ReplacementUUID string      `json:"replacementUuid,omitempty"`
	Cancel          bool        `json:"cancel,omitempty"`
	Txs             []BundleTx  `json:"txs"`
	Terms           BundleTerms `json:"terms"`
	// BackrunOf is the originator transaction the bundle starts with, when
	// its first element is a bare hash.
	BackrunOf  string `json:"backrunOf,omitempty"`
	ReceivedAt int64  `json:"receivedAt"` // UNIX milliseconds
}

// OrderflowTxStatus is the payload of TypeOrderflowTxStatus. Key: Hash.
type OrderflowTxStatus struct {
	Hash        string `json:"hash"`
	Status      string `json:"status"`
	BlockNumber uint64 `json:"blockNumber,omitempty"`
	BlockHash   string `json:"blockHash,omitempty"`
	Reason      string `json:"reason,omitempty"`
	At          int64  `json:"at"` // UNIX milliseconds
}

// OrderflowBundleStatus is the payload of TypeOrderflowBundleStatus.
// Key: BundleHash.
type OrderflowBundleStatus struct {
	BundleHash string `json:"bundleHash"`
	Status     string `json:"status"`
	// BuilderBundleHash is the hash the builders know the bundle by: the
	// hash of the transactions actually sent (a backrun's leading hash
	// replaced by the originator's raw transaction).
	BuilderBundleHash string   `json:"builderBundleHash,omitempty"`
	Builders          []string `json:"builders,omitempty"`
	BlockNumber       uint64   `json:"blockNumber,omitempty"`
	Reason            string   `json:"reason,omitempty"`
	At                int64    `json:"at"` // UNIX milliseconds
}

// OrderflowRefund is the payload of TypeOrderflowRefund: a refund
// liability and its payout. Key: TxHash.
type OrderflowRefund struct {
	RefundID   string `json:"refundId"` // "<bundleHash>:<txHash>"
	TxHash     string `json:"txHash"`   // the originator transaction backrun
	BundleHash string `json:"bundleHash"`
	Originator string `json:"originator"` // partner address, "" on the open endpoint
	Recipient  string `json:"recipient"`
	Percent    int    `json:"percent"`
	// PaymentWei is what the backrun paid the block's builder; AmountWei
	// the refund, Percent of it (decimal strings).
	PaymentWei   string `json:"paymentWei"`
	AmountWei    string `json:"amountWei"`
	BlockNumber  uint64 `json:"blockNumber"`
	Status       string `json:"status"`
	PayoutTxHash string `json:"payoutTxHash,omitempty"`
	PayoutBlock  uint64 `json:"payoutBlock,omitempty"`
	// Reason says why a FAILED refund's recipient refused the payout.
	Reason string `json:"reason,omitempty"`
	At     int64  `json:"at"` // UNIX milliseconds
}
