package flow

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"blockspace.exchange/platform/jsonrpc"
	of "blockspace.exchange/platform/orderflow"
)

// admit decides whether the senders of a decoded submission may submit
// now: each distinct sender takes a token of its bucket, and none is
// taken unless every sender has one, so a refused bundle costs its
// senders nothing; then, with a chain configured, each sender must be
// able to pay for its transactions.
func (o *Originators) admit(ctx context.Context, txs ...of.Tx) error {
	senders := distinctSenders(txs)
	for _, from := range senders {
		if ok, wait := o.bySender.Has(from.Hex()); !ok {
			return limited(wait, "too many submissions from sender %s", of.LowerAddress(from))
		}
	}
	for _, from := range senders {
		if ok, wait := o.bySender.Allow(from.Hex()); !ok {
			return limited(wait, "too many submissions from sender %s", of.LowerAddress(from))
		}
	}
	if o.cfg.Funds != nil {
		return of.RPCError(o.cfg.Funds.Check(ctx, txs))
	}
	return nil
}

func distinctSenders(txs []of.Tx) []common.Address {
	var out []common.Address
	seen := make(map[common.Address]bool, len(txs))
	for _, tx := range txs {
		if !seen[tx.From] {
			seen[tx.From] = true
			out = append(out, tx.From)
		}
	}
	return out
}

// bundleTxs is the transactions of a bundle (an originator bundle has no
// hash-only items).
func bundleTxs(b of.Bundle) []of.Tx {
	out := make([]of.Tx, 0, len(b.Txs))
	for _, it := range b.Txs {
		if !it.HashOnly {
			out = append(out, it.Tx)
		}
	}
	return out
}

// limited is the answer over a rate limit: -32000 with HTTP 429 and
// Retry-After, the seconds until the bucket has a token again.
func limited(wait time.Duration, format string, args ...any) error {
	e := jsonrpc.Errorf(jsonrpc.CodeRule, format, args...)
	e.Message += "; retry after " + strconv.Itoa(int(max(1, math.Ceil(wait.Seconds())))) + " s"
	e.HTTPStatus, e.RetryAfter = http.StatusTooManyRequests, wait
	return e
}
