// Package orderflow holds what the private-orderflow services share beyond
// the topic contract: the decoder and checks of signed transactions, the
// bundle decoder and its limits, the refund query, the searcher's bundle
// methods, and the API keys with their cached lookups.
package orderflow

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto/kzg4844"

	"blockspace.exchange/topics"
)

// Rules are the checks a signed transaction must pass before it is
// accepted. Zero fields take the defaults of DefaultRules.
type Rules struct {
	ChainID *big.Int // the environment's chain; required
	// MaxTxBytes bounds the canonical encoding (without a blob sidecar).
	MaxTxBytes int
	// MinGas and MaxGas bound the gas limit: below 21000 no transaction
	// runs, above 2^24 (EIP-7825) no block takes it.
	MinGas, MaxGas uint64
	// MaxFeePerGas caps gasPrice / maxFeePerGas in wei: a fee above it is a
	// mistake the sender would regret (default 10,000 gwei).
	MaxFeePerGas *big.Int
	// MaxNonce rejects nonces no account reaches (default 2^32).
	MaxNonce uint64
	// MaxBlobs caps the blobs of a blob transaction (default 9).
	MaxBlobs int
}

// Defaults of Rules.
const (
	DefaultMaxTxBytes = 128 << 10
	DefaultMinGas     = 21_000
	DefaultMaxGas     = 1 << 24
	DefaultMaxNonce   = 1 << 32
	DefaultMaxBlobs   = 9
)

// DefaultMaxFeePerGas is 10,000 gwei.
var DefaultMaxFeePerGas = new(big.Int).Mul(big.NewInt(10_000), big.NewInt(1_000_000_000))

// WithDefaults fills the zero fields.
func (r Rules) WithDefaults() Rules {
	if r.MaxTxBytes == 0 {
		r.MaxTxBytes = DefaultMaxTxBytes
	}
	if r.MinGas == 0 {
		r.MinGas = DefaultMinGas
	}
	if r.MaxGas == 0 {
		r.MaxGas = DefaultMaxGas
	}
	if r.MaxFeePerGas == nil {
		r.MaxFeePerGas = DefaultMaxFeePerGas
	}
	if r.MaxNonce == 0 {
		r.MaxNonce = DefaultMaxNonce
	}
	if r.MaxBlobs == 0 {
		r.MaxBlobs = DefaultMaxBlobs
	}
	return r
}

// maxWireBytes is the most bytes a signed transaction can take as sent:
// MaxTxBytes of transaction and a sidecar of MaxBlobs blobs, each with its
// commitment and, in the network form since Fusaka, its cell proofs (a
// blob proof before), with their RLP headers; 1 KiB covers the list
// headers and the version.
func (r Rules) maxWireBytes() int {
	const perBlob = (4 + len(kzg4844.Blob{})) + (1 + len(kzg4844.Commitment{})) +
		kzg4844.CellProofsPerBlob*(1+len(kzg4844.Proof{}))
	return r.MaxTxBytes + r.MaxBlobs*perBlob + 1024
}

// TxError is a transaction that failed decoding or a check. Callers answer
// it with JSON-RPC -32600 (docs/orderflow.md "Transaction checks").
type TxError struct{ Reason string }

func (e *TxError) Error() string { return "invalid transaction: " + e.Reason }

func txErr(format string, args ...any) error { return &TxError{Reason: fmt.Sprintf(format, args...)} }

// IsTxError reports whether err is a rejected transaction.
func IsTxError(err error) bool {
	var te *TxError
	return errors.As(err, &te)
}

// Tx is an accepted transaction: the go-ethereum value, its sender, and
// the wire forms the topics carry.
type Tx struct {
	Tx      *types.Transaction
	From    common.Address
	Hash    common.Hash
	Raw     string // 0x hex of the bytes as sent (with a blob sidecar, if any)
	Decoded topics.DecodedTx
}

// DecodeHex decodes a 0x-prefixed hex string. It is strict: the prefix is
// required and the digits must be even in number.
func DecodeHex(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return nil, errors.New("not 0x-prefixed hex")
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, errors.New("not valid hex")
	}
	return b, nil
}

// DecodeRawTx decodes a signed transaction given as 0x hex and checks it.
func DecodeRawTx(raw string, rules Rules) (Tx, error) {
	rules = rules.WithDefaults()
	if max := rules.maxWireBytes(); len(raw) > 2+2*max {
		return Tx{}, txErr("%d bytes, more than a transaction of %d bytes with %d blobs takes (%d)",
			(len(raw)-2)/2, rules.MaxTxBytes, rules.MaxBlobs, max)
	}
	b, err := DecodeHex(raw)
	if err != nil {
		return Tx{}, txErr("%v", err)
	}
	return DecodeTx(b, rules)
}

// DecodeTx decodes the binary (EIP-2718) form of a signed transaction:
// legacy, access-list, dynamic-fee, blob (with or without sidecar) and
// set-code types, and checks it against rules: the chain id of the
// environment (legacy transactions must be EIP-155 protected), the size,
// gas, fee and nonce bounds, a signature that recovers to a sender, and
// last, once the sender is known, the KZG proofs of a blob sidecar.
func DecodeTx(b []byte, rules Rules) (Tx, error) {
	rules = rules.WithDefaults()
	if len(b) == 0 {
		return Tx{}, txErr("empty")
	}
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(b); err != nil {
		return Tx{}, txErr("cannot decode: %v", err)
	}
	if err := check(tx, rules); err != nil {
		return Tx{}, err
	}
	// The signature is recovered before the blob proofs are verified: a
	// recovery costs tens of microseconds, the proofs of a full sidecar a
	// hundred milliseconds and more, so input that names no sender never
	// buys the dearest check.
	from, err := types.Sender(types.LatestSignerForChainID(rules.ChainID), tx)
	if err != nil {
		return Tx{}, txErr("signature does not recover a sender: %v", err)
	}
	if sc := tx.BlobTxSidecar(); sc != nil {
		if err := verifyBlobProofs(sc); err != nil {
			return Tx{}, err
		}
	}
	out := Tx{Tx: tx, From: from, Hash: tx.Hash(), Raw: hexutil.Encode(b)}
	out.Decoded = Decoded(tx, from)
	return out, nil
}

func check(tx *types.Transaction, rules Rules) error {
	if tx.Type() == types.LegacyTxType && !tx.Protected() {
		return txErr("legacy transaction without EIP-155 replay protection")
	}
	if tx.ChainId().Cmp(rules.ChainID) != 0 {
		return txErr("chain id %s, this endpoint takes chain id %s", tx.ChainId(), rules.ChainID)
	}
	size := tx.Size()
	if sc := tx.BlobTxSidecar(); sc != nil {
		size = tx.WithoutBlobTxSidecar().Size()
		if len(sc.Blobs) > rules.MaxBlobs {
			return txErr("%d blobs, at most %d", len(sc.Blobs), rules.MaxBlobs)
		}
		if err := sc.ValidateBlobCommitmentHashes(tx.BlobHashes()); err != nil {
			return txErr("blob sidecar does not match the blob hashes: %v", err)
		}
		if len(sc.Blobs) != len(sc.Commitments) {
			return txErr("blob sidecar has %d blobs for %d commitments, want one a commitment", len(sc.Blobs), len(sc.Commitments))
		}
	}
	if size > uint64(rules.MaxTxBytes) {
		return txErr("%d bytes, at most %d", size, rules.MaxTxBytes)
	}
	if tx.Type() == types.BlobTxType && len(tx.BlobHashes()) == 0 {
		return txErr("blob transaction without blob hashes")
	}
	if tx.Type() == types.BlobTxType && len(tx.BlobHashes()) > rules.MaxBlobs {
		return txErr("%d blob hashes, at most %d", len(tx.BlobHashes()), rules.MaxBlobs)
	}
	if tx.Type() == types.SetCodeTxType && len(tx.SetCodeAuthorizations()) == 0 {
		return txErr("set-code transaction without authorizations")
	}
	if g := tx.Gas(); g < rules.MinGas || g > rules.MaxGas {
		return txErr("gas %d outside [%d, %d]", g, rules.MinGas, rules.MaxGas)
	}
	return checkFees(tx, rules)
}

func checkFees(tx *types.Transaction, rules Rules) error {
	feeCap, tip := tx.GasFeeCap(), tx.GasTipCap()
	if feeCap.Sign() <= 0 {
		return txErr("fee cap is zero: the transaction can never pay the base fee")
	}
	if feeCap.Cmp(rules.MaxFeePerGas) > 0 {
		return txErr("fee cap %s wei per gas is above the sanity limit %s", feeCap, rules.MaxFeePerGas)
	}
	if tip.Cmp(feeCap) > 0 {
		return txErr("maxPriorityFeePerGas %s is above maxFeePerGas %s", tip, feeCap)
	}
	if tx.Type() == types.BlobTxType && tx.BlobGasFeeCap().Sign() <= 0 {
		return txErr("maxFeePerBlobGas is zero")
	}
	if tx.Nonce() >= rules.MaxNonce || tx.Nonce() == math.MaxUint64 {
		return txErr("nonce %d is not one an account reaches (at most %d)", tx.Nonce(), rules.MaxNonce-1)
	}
	return nil
}

// Decoded is the searcher's view of tx: every field but the signature.
func Decoded(tx *types.Transaction, from common.Address) topics.DecodedTx {
	d := topics.DecodedTx{
		ChainID:    hexutil.EncodeBig(tx.ChainId()),
		Type:       hexutil.EncodeUint64(uint64(tx.Type())),
		Hash:       tx.Hash().Hex(),
		From:       lowerHex(from),
		Nonce:      hexutil.EncodeUint64(tx.Nonce()),
		Value:      hexutil.EncodeBig(tx.Value()),
		Gas:        hexutil.EncodeUint64(tx.Gas()),
		Data:       hexutil.Encode(tx.Data()),
		AccessList: accessList(tx.AccessList()),
	}
	if d.Data == "" {
		d.Data = "0x"
	}
	if to := tx.To(); to != nil {
		s := lowerHex(*to)
		d.To = &s
	}
	switch tx.Type() {
	case types.LegacyTxType, types.AccessListTxType:
		d.GasPrice = hexutil.EncodeBig(tx.GasPrice())
	default:
		d.MaxFeePerGas = hexutil.EncodeBig(tx.GasFeeCap())
		d.MaxPriorityFeePerGas = hexutil.EncodeBig(tx.GasTipCap())
	}
	if tx.Type() == types.BlobTxType {
		d.MaxFeePerBlobGas = hexutil.EncodeBig(tx.BlobGasFeeCap())
		for _, h := range tx.BlobHashes() {
			d.BlobVersionedHashes = append(d.BlobVersionedHashes, h.Hex())
		}
	}
	for _, a := range tx.SetCodeAuthorizations() {
		item := topics.Authorization{
			ChainID: hexutil.EncodeBig(a.ChainID.ToBig()),
			Address: lowerHex(a.Address),
			Nonce:   hexutil.EncodeUint64(a.Nonce),
		}
		if who, err := a.Authority(); err == nil {
			item.Authority = lowerHex(who)
		}
		d.AuthorizationList = append(d.AuthorizationList, item)
	}
	return d
}

func accessList(al types.AccessList) []topics.AccessTuple {
	out := make([]topics.AccessTuple, 0, len(al))
	for _, t := range al {
		keys := make([]string, 0, len(t.StorageKeys))
		for _, k := range t.StorageKeys {
			keys = append(keys, k.Hex())
		}
		out = append(out, topics.AccessTuple{Address: lowerHex(t.Address), StorageKeys: keys})
	}
	return out
}

// lowerHex is the lower-case 0x form of an address used on every wire.
func lowerHex(a common.Address) string { return strings.ToLower(a.Hex()) }

// LowerAddress returns the lower-case 0x form of a.
func LowerAddress(a common.Address) string { return lowerHex(a) }

// verifyBlobProofs checks that the sidecar's proofs show each blob is the
// one its commitment commits to, as a node's transaction pool does before
// it gossips a blob transaction: one proof a blob (version 0) or the
// cell proofs of every blob (version 1, the network form since Fusaka).
// A transaction whose blobs do not match would be dropped by every node
// and builder; it is refused here instead of being streamed to searchers.
func verifyBlobProofs(sc *types.BlobTxSidecar) error {
	switch sc.Version {
	case types.BlobSidecarVersion0:
		if len(sc.Proofs) != len(sc.Blobs) {
			return txErr("blob sidecar has %d proofs for %d blobs, want one a blob", len(sc.Proofs), len(sc.Blobs))
		}
		for i := range sc.Blobs {
			if err := kzg4844.VerifyBlobProof(&sc.Blobs[i], sc.Commitments[i], sc.Proofs[i]); err != nil {
				return txErr("blob %d: its KZG proof does not verify against its commitment", i)
			}
		}
	case types.BlobSidecarVersion1:
		if want := len(sc.Blobs) * kzg4844.CellProofsPerBlob; len(sc.Proofs) != want {
			return txErr("blob sidecar has %d cell proofs for %d blobs, want %d", len(sc.Proofs), len(sc.Blobs), want)
		}
		if err := kzg4844.VerifyCellProofs(sc.Blobs, sc.Commitments, sc.Proofs); err != nil {
			return txErr("blob cell proofs do not verify against the commitments")
		}
	default:
		return txErr("blob sidecar version %d, want 0 or 1", sc.Version)
	}
	return nil
}
