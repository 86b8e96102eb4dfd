package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// Book lets another settlement package (trading) post journal entries with
// the ledger's own machinery, in its own transaction: it claims entries by
// id exactly once, locks the balances it names in the one order every
// settler transaction uses, moves them in memory and writes postings,
// balances and rejections with one statement each.
//
// Use it in this order: Claim, Lock (once, with every balance the entries
// may touch), then Post, Release and Reject, then Write.
type Book struct{ b *batch }

// BalanceKey names the balance of one token in one account.
type BalanceKey struct{ Account, Token int64 }

// Entry is a journal entry to claim: ID is the deduplication key (an
// envelope id), Kind the envelope type.
type Entry struct {
	ID, Kind string
	At       time.Time
}

// NewBook returns a book writing in tx.
func NewBook(tx pgx.Tx) *Book {
	return &Book{b: &batch{tx: tx, bals: map[balKey]*balance{}, entries: map[string]int64{}}}
}

// Claim inserts a journal entry for every id not seen before and returns
// those new entries by id; an id missing from the result was applied (or
// rejected) earlier and must change nothing now. Ids must be unique.
func (k *Book) Claim(ctx context.Context, entries []Entry) (map[string]int64, error) {
	if len(entries) == 0 {
		return k.b.entries, nil
	}
	cmds := make([]Command, len(entries))
	for i, e := range entries {
		cmds[i] = Command{ID: e.ID, Type: e.Kind, At: e.At}
	}
	if err := k.b.insertJournal(ctx, cmds); err != nil {
		return nil, err
	}
	return k.b.entries, nil
}

// Lock creates missing balance rows and locks every balance of keys; call
// it once per transaction, before Post and Release.
func (k *Book) Lock(ctx context.Context, keys []BalanceKey) error {
	bk := make([]balKey, len(keys))
	for i, key := range keys {
		bk[i] = balKey{key.Account, key.Token}
	}
	slices.SortFunc(bk, func(x, y balKey) int {
		if x.account != y.account {
			return int(sign(x.account - y.account))
		}
		return int(sign(x.token - y.token))
	})
	return k.b.lockBalances(ctx, slices.Compact(bk))
}

// Balance returns a locked balance's quantity and locked amount, as moved
// so far in this book.
func (k *Book) Balance(acc, tok int64) (quantity, locked decimal.Decimal, err error) {
	bal, err := k.b.balance(acc, tok)
	if err != nil {
		return decimal.Decimal{}, decimal.Decimal{}, err
	}
	return bal.quantity, bal.locked, nil
}

// Post adds a posting to the claimed entry id and moves the balance. It
// checks no rule: the caller decides beforehand that the entry may post.
func (k *Book) Post(id string, acc, tok int64, amount decimal.Decimal, typ int, at time.Time) error {
	if _, ok := k.b.entries[id]; !ok {
		return fmt.Errorf("post to entry %s, which was not claimed", id)
	}
	if _, err := k.b.balance(acc, tok); err != nil {
		return err
	}
	k.b.post(Command{ID: id, At: at}, acc, tok, amount, typ)
	return nil
}

// Release takes amount off acc's locked funds without moving its quantity:
// a reservation given back, or the part of one about to leave the account
// through postings.
func (k *Book) Release(acc, tok int64, amount decimal.Decimal) error {
	return k.b.release(acc, tok, amount)
}

// Reject records the claimed entry id as refused, with its reason; it
// must have no postings.
func (k *Book) Reject(id, reason string) {
	k.b.reject(Command{ID: id}, reason)
}

// Postings is how many postings the book holds.
func (k *Book) Postings() int { return len(k.b.postings) }

// Write stores the postings, the moved balances and the rejections.
func (k *Book) Write(ctx context.Context) error {
	for _, step := range []func(context.Context) error{k.b.writePostings, k.b.writeBalances, k.b.writeRejections} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}
