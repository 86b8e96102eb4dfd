package orderflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/topics"
)

// Bundle limits (docs/orderflow.md "Searcher bundles").
const (
	MaxBundleTxs   = 100
	MaxBundleBytes = 300 << 10
)

// BundleKind says who sends a bundle: only a searcher's bundle may start
// with a bare originator transaction hash.
type BundleKind int

// Kinds of bundles.
const (
	OriginatorBundle BundleKind = iota + 1
	SearcherBundle
)

// bundleBody is the wire form of an eth_sendBundle parameter.
type bundleBody struct {
	Txs               []string        `json:"txs"`
	BlockNumber       json.RawMessage `json:"blockNumber"`
	MinTimestamp      *int64          `json:"minTimestamp"`
	MaxTimestamp      *int64          `json:"maxTimestamp"`
	RevertingTxHashes []string        `json:"revertingTxHashes"`
	ReplacementUUID   string          `json:"replacementUuid"`
	RefundPercent     *int            `json:"refundPercent"`
	RefundRecipient   string          `json:"refundRecipient"`
}

// Bundle is a decoded and checked bundle.
type Bundle struct {
	Hash            common.Hash // keccak256 of the concatenated tx hashes; zero for a cancellation
	Txs             []BundleItem
	Terms           topics.BundleTerms
	ReplacementUUID string
	// Refund is set when the body carried refundPercent/refundRecipient.
	Refund *topics.RefundPolicy
	// Cancel is true for an empty txs with a replacementUuid (searchers).
	Cancel bool
}

// BundleItem is one element of a bundle: a transaction, or (HashOnly) the
// hash of an originator transaction a backrun starts with.
type BundleItem struct {
	HashOnly bool
	Hash     common.Hash
	Tx       Tx
}

// Wire returns the topic form of the item.
func (it BundleItem) Wire() topics.BundleTx {
	if it.HashOnly {
		return topics.BundleTx{Hash: it.Hash.Hex()}
	}
	d := it.Tx.Decoded
	return topics.BundleTx{Hash: it.Hash.Hex(), Raw: it.Tx.Raw, Tx: &d}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ParseBundle decodes the one parameter of eth_sendBundle and checks it:
// known fields only, at most MaxBundleTxs transactions and MaxBundleBytes
// of them, each transaction valid under rules, a searcher's bare hash only
// first, block and time fields well-formed, a UUID replacementUuid and a
// refund percent in (0, 100). Errors are *ParamError or *TxError.
func ParseBundle(param json.RawMessage, kind BundleKind, rules Rules) (Bundle, error) {
	rules = rules.WithDefaults()
	if t := bytes.TrimLeft(param, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Bundle{}, paramErr("bundle must be a JSON object")
	}
	var body bundleBody
	dec := json.NewDecoder(bytes.NewReader(param))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return Bundle{}, paramErr("bundle: %v", err)
	}
	b := Bundle{ReplacementUUID: body.ReplacementUUID}
	if b.ReplacementUUID != "" && !uuidPattern.MatchString(b.ReplacementUUID) {
		return Bundle{}, paramErr("replacementUuid %q is not a UUID", b.ReplacementUUID)
	}
	if len(body.Txs) == 0 {
		if kind == SearcherBundle && b.ReplacementUUID != "" {
			if body.hasTerms() {
				return Bundle{}, paramErr("an empty txs cancels the replacement group and takes only replacementUuid")
			}
			b.Cancel = true
			return b, nil
		}
		return Bundle{}, paramErr("txs is empty")
	}
	if len(body.Txs) > MaxBundleTxs {
		return Bundle{}, paramErr("%d txs, at most %d per bundle", len(body.Txs), MaxBundleTxs)
	}
	if err := b.decodeTxs(body.Txs, kind, rules); err != nil {
		return Bundle{}, err
	}
	if err := b.decodeTerms(body); err != nil {
		return Bundle{}, err
	}
	if body.RefundPercent != nil || body.RefundRecipient != "" {
		if kind == SearcherBundle {
			return Bundle{}, paramErr("refundPercent and refundRecipient are for originator bundles")
		}
		p, err := refundPolicy(body.RefundRecipient, body.RefundPercent)
		if err != nil {
			return Bundle{}, err
		}
		b.Refund = &p
	}
	return b, nil
}

// hasTerms reports whether the body sent any field besides txs and
// replacementUuid.
func (body bundleBody) hasTerms() bool {
	return (len(body.BlockNumber) > 0 && string(body.BlockNumber) != "null") || body.MinTimestamp != nil || body.MaxTimestamp != nil ||
		body.RevertingTxHashes != nil || body.RefundPercent != nil || body.RefundRecipient != ""
}

func (b *Bundle) decodeTxs(txs []string, kind BundleKind, rules Rules) error {
	total := 0
	hashes := make([]byte, 0, 32*len(txs))
	seen := make(map[common.Hash]bool, len(txs))
	for i, raw := range txs {
		total += (len(raw) - 2) / 2
		if total > MaxBundleBytes {
			return paramErr("bundle is larger than %d bytes", MaxBundleBytes)
		}
		item, err := decodeItem(raw, i, kind, rules)
		if err != nil {
			return err
		}
		if seen[item.Hash] {
			return paramErr("txs[%d] repeats transaction %s", i, item.Hash.Hex())
		}
		seen[item.Hash] = true
		b.Txs = append(b.Txs, item)
		hashes = append(hashes, item.Hash[:]...)
	}
	if kind == SearcherBundle && len(b.Txs) == 1 && b.Txs[0].HashOnly {
		return paramErr("a backrun needs at least one transaction after the originator hash")
	}
	b.Hash = crypto.Keccak256Hash(hashes)
	return nil
}

func decodeItem(raw string, i int, kind BundleKind, rules Rules) (BundleItem, error) {
	if len(raw) == 66 && kind == SearcherBundle && i == 0 {
		b, err := DecodeHex(raw)
		if err != nil {
			return BundleItem{}, paramErr("txs[0]: %v", err)
		}
		return BundleItem{HashOnly: true, Hash: common.BytesToHash(b)}, nil
	}
	tx, err := DecodeRawTx(raw, rules)
	if err != nil {
		return BundleItem{}, &TxError{Reason: fmt.Sprintf("txs[%d]: %s", i, strings.TrimPrefix(err.Error(), "invalid transaction: "))}
	}
	return BundleItem{Hash: tx.Hash, Tx: tx}, nil
}

func (b *Bundle) decodeTerms(body bundleBody) error {
	if len(body.BlockNumber) > 0 && string(body.BlockNumber) != "null" {
		n, err := Quantity(body.BlockNumber)
		if err != nil {
			return paramErr("blockNumber: %v", err)
		}
		b.Terms.BlockNumber = hexutil.EncodeUint64(n)
	}
	if body.MinTimestamp != nil {
		if *body.MinTimestamp < 0 {
			return paramErr("minTimestamp is negative")
		}
		b.Terms.MinTimestamp = *body.MinTimestamp
	}
	if body.MaxTimestamp != nil {
		if *body.MaxTimestamp < 0 {
			return paramErr("maxTimestamp is negative")
		}
		b.Terms.MaxTimestamp = *body.MaxTimestamp
	}
	if b.Terms.MaxTimestamp != 0 && b.Terms.MinTimestamp > b.Terms.MaxTimestamp {
		return paramErr("minTimestamp %d is after maxTimestamp %d", b.Terms.MinTimestamp, b.Terms.MaxTimestamp)
	}
	inBundle := make(map[common.Hash]bool, len(b.Txs))
	for _, it := range b.Txs {
		inBundle[it.Hash] = true
	}
	for _, h := range body.RevertingTxHashes {
		raw, err := DecodeHex(h)
		if err != nil || len(raw) != 32 {
			return paramErr("revertingTxHashes: %q is not a 32-byte hash", h)
		}
		if !inBundle[common.BytesToHash(raw)] {
			return paramErr("revertingTxHashes: %s is not a transaction of the bundle", h)
		}
		b.Terms.RevertingTxHashes = append(b.Terms.RevertingTxHashes, common.BytesToHash(raw).Hex())
	}
	return nil
}

// Quantity reads a block number given as a hex quantity string or a JSON
// integer, as blockNumber and maxBlockNumber are sent.
func Quantity(raw json.RawMessage) (uint64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return hexutil.DecodeUint64(s)
	}
	return strconv.ParseUint(string(raw), 10, 64)
}

// ParamError is a parameter that breaks a method's rules; callers answer
// it with JSON-RPC -32602.
type ParamError struct{ Reason string }

func (e *ParamError) Error() string { return "invalid params: " + e.Reason }

func paramErr(format string, args ...any) error {
	return &ParamError{Reason: fmt.Sprintf(format, args...)}
}

// ParseRefundQuery reads the refund query parameter, "<address>:<percent>"
// with an integer percent 0 < p < 100.
func ParseRefundQuery(q string) (topics.RefundPolicy, error) {
	addr, pct, ok := strings.Cut(q, ":")
	if !ok || addr == "" {
		return topics.RefundPolicy{}, paramErr("refund %q is not <address>:<percent>", q)
	}
	p, err := strconv.Atoi(pct)
	if err != nil {
		return topics.RefundPolicy{}, paramErr("refund percent %q is not an integer", pct)
	}
	return refundPolicy(addr, &p)
}

func refundPolicy(recipient string, percent *int) (topics.RefundPolicy, error) {
	if percent == nil {
		return topics.RefundPolicy{}, paramErr("refundRecipient needs refundPercent")
	}
	if *percent <= 0 || *percent >= 100 {
		return topics.RefundPolicy{}, paramErr("refund percent %d is not in 1..99", *percent)
	}
	p := topics.RefundPolicy{Percent: *percent}
	if recipient != "" {
		if !common.IsHexAddress(recipient) || !strings.HasPrefix(recipient, "0x") {
			return topics.RefundPolicy{}, paramErr("refund recipient %q is not a 0x address", recipient)
		}
		p.Recipient = strings.ToLower(recipient)
	}
	return p, nil
}
