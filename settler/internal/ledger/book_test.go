package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
)

// TestBookPostsEachEntryOnce posts an entry through a Book from reserved
// funds, then claims the same id again: the second claim gets nothing and
// the balances move once.
func TestBookPostsEachEntryOnce(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := context.Background()
	apply(t, pool, deposit("d1", alice, "5"))
	_, cur, pre := accountsOf(t, pool, alice)
	lock(t, pool, cur, "2")
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	move := func(id string) (claimed int) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			book := ledger.NewBook(tx)
			entries, err := book.Claim(ctx, []ledger.Entry{{ID: id, Kind: "test.move", At: time.Now()}, {ID: id + "-refused", Kind: "test.move", At: time.Now()}})
			if err != nil {
				return err
			}
			claimed = len(entries)
			if _, ok := entries[id]; !ok {
				return nil
			}
			if err := book.Lock(ctx, []ledger.BalanceKey{{Account: pre, Token: 1}, {Account: cur, Token: 1}, {Account: sys.Fees, Token: 1}, {Account: cur, Token: 1}}); err != nil {
				return err
			}
			if err := book.Release(cur, 1, decimal.RequireFromString("1.5")); err != nil {
				return err
			}
			for _, p := range []struct {
				acc    int64
				amount string
				typ    int
			}{{cur, "-1.4", ledger.TypeBuy}, {pre, "1.4", ledger.TypeSell}, {cur, "-0.1", ledger.TypeTradingFee}, {sys.Fees, "0.1", ledger.TypeTradingFee}} {
				if err := book.Post(id, p.acc, 1, decimal.RequireFromString(p.amount), p.typ, time.Now()); err != nil {
					return err
				}
			}
			if err := book.Post("never-claimed", cur, 1, decimal.NewFromInt(1), ledger.TypeBuy, time.Now()); err == nil {
				t.Error("posting to an unclaimed entry succeeded")
			}
			book.Reject(id+"-refused", "refused for the test")
			return book.Write(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		return claimed
	}
	if n := move("m1"); n != 2 {
		t.Fatalf("first claim got %d entries", n)
	}
	if n := move("m1"); n != 0 {
		t.Fatalf("second claim got %d entries", n)
	}
	if q, l := balance(t, pool, cur); !q.Equal(decimal.RequireFromString("3.5")) || !l.Equal(decimal.RequireFromString("0.5")) {
		t.Fatalf("current account %s locked %s", q, l)
	}
	if q, _ := balance(t, pool, pre); !q.Equal(decimal.RequireFromString("1.4")) {
		t.Fatalf("preconf account %s", q)
	}
	if status, reason := journalStatus(t, pool, "m1-refused"); status != "rejected" || reason != "refused for the test" {
		t.Fatalf("refused entry %s %q", status, reason)
	}
	mustAudit(t, pool)
}
