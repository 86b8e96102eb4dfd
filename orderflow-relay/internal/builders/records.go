package builders

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/topics"
)

// txRecord is an orderflow.tx payload as the forwarder needs it: the
// decoded transaction stays the JSON bytes ingress wrote, stored as they
// are instead of decoded and encoded again.
type txRecord struct {
	Hash       string              `json:"hash"`
	Raw        string              `json:"raw"`
	Tx         json.RawMessage     `json:"tx"`
	Originator string              `json:"originator"`
	Refund     topics.RefundPolicy `json:"refund"`
	Method     string              `json:"method"`
	ReceivedAt int64               `json:"receivedAt"`
}

// record is one decoded orderflow record; exactly one payload is set.
type record struct {
	tx       *txRecord
	ob       *topics.OrderflowOriginatorBundle
	sb       *topics.OrderflowSearcherBundle
	received time.Time // the payload's receivedAt, whatever its version's unit
	src      source    // set by the caller
}

// errSkip marks a record of a type the forwarder does not handle.
var errSkip = errors.New("not a submission")

// decodeRecord reads a record of the orderflow topics in one pass: the
// type and version come from the headers, the payload from the envelope's
// data. It checks what the forwarder relies on (hashes, raw transactions)
// and nothing more; a record that fails is skipped by the caller.
func decodeRecord(r *kgo.Record) (record, error) {
	typ, version, ok := kafka.RecordType(r)
	if !ok {
		return record{}, errors.New("record without type and version headers")
	}
	// Version 1 differs only in receivedAt's unit; records of it are
	// still in the log after an upgrade, or come from an ingress not yet
	// upgraded.
	if version != 1 && version != topics.OrderflowSubmissionVersion {
		return record{}, fmt.Errorf("%s version %d, this relay reads 1 and %d", typ, version, topics.OrderflowSubmissionVersion)
	}
	var rec record
	var err error
	var receivedAt int64
	switch typ {
	case topics.TypeOrderflowTx:
		var env struct{ Data txRecord }
		err = json.Unmarshal(r.Value, &env)
		rec.tx, receivedAt = &env.Data, env.Data.ReceivedAt
		if err == nil {
			err = checkTx(env.Data)
		}
	case topics.TypeOrderflowOriginatorBundle:
		var env struct {
			Data topics.OrderflowOriginatorBundle
		}
		err = json.Unmarshal(r.Value, &env)
		rec.ob, receivedAt = &env.Data, env.Data.ReceivedAt
		if err == nil {
			err = checkOriginatorBundle(env.Data)
		}
	case topics.TypeOrderflowSearcherBundle:
		var env struct {
			Data topics.OrderflowSearcherBundle
		}
		err = json.Unmarshal(r.Value, &env)
		rec.sb, receivedAt = &env.Data, env.Data.ReceivedAt
		if err == nil {
			err = checkSearcherBundle(env.Data)
		}
	default:
		return record{}, errSkip
	}
	if err == nil && topics.HasNUL(r.Value) {
		err = errors.New("a string holds a NUL character, which Postgres does not store")
	}
	if err != nil {
		return record{}, fmt.Errorf("%s: %w", typ, err)
	}
	rec.received = topics.SubmissionReceivedAt(version, receivedAt)
	return rec, nil
}

func checkTx(m txRecord) error {
	if !isHash(m.Hash) {
		return fmt.Errorf("hash %q is not 32 bytes of hex", m.Hash)
	}
	if !strings.HasPrefix(m.Raw, "0x") || len(m.Raw) < 4 {
		return errors.New("raw transaction missing")
	}
	if len(m.Tx) == 0 || m.Tx[0] != '{' {
		return errors.New("decoded transaction missing")
	}
	if !plainJSON(m.Tx) {
		return errors.New("decoded transaction holds a string that is not printable ASCII without escapes, or a number that is not a plain integer")
	}
	return checkRefund(m.Refund)
}

// checkRefund refuses a refund percent orderflow_txs does not take.
func checkRefund(p topics.RefundPolicy) error {
	if p.Percent < 0 || p.Percent > 99 {
		return fmt.Errorf("refund percent %d is not in 0..99", p.Percent)
	}
	return nil
}

func checkOriginatorBundle(m topics.OrderflowOriginatorBundle) error {
	if !isHash(m.BundleHash) || len(m.Txs) == 0 {
		return errors.New("bundle hash or transactions missing")
	}
	for _, t := range m.Txs {
		if t.Tx == nil || !isHash(t.Hash) || !strings.HasPrefix(t.Raw, "0x") {
			return fmt.Errorf("bundle transaction %q incomplete", t.Hash)
		}
	}
	return checkRefund(m.Refund)
}

func checkSearcherBundle(m topics.OrderflowSearcherBundle) error {
	if m.Searcher == "" {
		return errors.New("searcher missing")
	}
	if m.Cancel {
		if m.ReplacementUUID == "" {
			return errors.New("cancellation without replacementUuid")
		}
		return nil
	}
	if !isHash(m.BundleHash) || len(m.Txs) == 0 {
		return errors.New("bundle hash or transactions missing")
	}
	for i, t := range m.Txs {
		backrun := i == 0 && m.BackrunOf != ""
		if !isHash(t.Hash) || (!backrun && !strings.HasPrefix(t.Raw, "0x")) {
			return fmt.Errorf("bundle transaction %d incomplete", i)
		}
	}
	if m.BackrunOf != "" && !strings.EqualFold(m.BackrunOf, m.Txs[0].Hash) {
		return errors.New("backrunOf is not the first element")
	}
	return nil
}

// maxPlainDigits bounds an integer of a stored decoded transaction.
const maxPlainDigits = 20

// plainJSON reports whether b, valid JSON, holds only strings of
// printable ASCII without escapes and integers of at most maxPlainDigits
// digits, as every decoded transaction ingress writes does (its values
// are hex strings). The decoded JSON is stored as it came, as jsonb,
// which refuses a NUL, a lone surrogate or invalid UTF-8 in a string and
// a number beyond numeric's range: such a record would fail the poll's
// transaction at every retry and hold the forwarder on it.
func plainJSON(b []byte) bool {
	inString, digits := false, 0
	for _, c := range b {
		switch {
		case inString:
			if c == '"' {
				inString = false
			} else if c == '\\' || c < ' ' || c > '~' {
				return false
			}
		case c >= '0' && c <= '9':
			if digits++; digits > maxPlainDigits {
				return false
			}
		case c == '.' || (digits > 0 && (c == 'e' || c == 'E')):
			return false
		default:
			inString, digits = c == '"', 0
		}
	}
	return true
}

// isHash accepts 0x and 64 hex digits.
func isHash(s string) bool {
	if len(s) != 66 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// sender reads "from" of a decoded transaction.
func sender(decoded json.RawMessage) string {
	var d struct {
		From string `json:"from"`
	}
	_ = json.Unmarshal(decoded, &d)
	return strings.ToLower(d.From)
}

// encodeDecoded is the stored JSON of a decoded transaction.
func encodeDecoded(d *topics.DecodedTx) string {
	b, err := json.Marshal(d)
	if err != nil {
		return "{}"
	}
	return string(b)
}
