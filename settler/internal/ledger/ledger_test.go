package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func deposit(id, addr, qty string) ledger.Command {
	return ledger.Command{ID: id, Type: topics.TypeDepositObserved, At: time.Now(), Deposit: &topics.DepositObserved{
		ChainID: 1337, BlockNumber: 5, BlockHash: "0xb", TransactionHash: "0x" + id, Sender: addr, Depositor: addr,
		TokenID: 1, Quantity: qty, AmountWei: "1"}}
}

func transfer(id int64, user, from, to int64, qty string) ledger.Command {
	return ledger.Command{ID: fmt.Sprintf("transfer-%d", id), Type: topics.TypeLedgerTransfer, At: time.Now(),
		Transfer: &topics.LedgerTransfer{TransferID: id, UserID: user, FromAccountID: from, ToAccountID: to, TokenID: 1, Quantity: qty}}
}

func apply(t testing.TB, pool *pgxpool.Pool, cmds ...ledger.Command) ledger.Result {
	t.Helper()
	ctx := context.Background()
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var res ledger.Result
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res, err = ledger.Apply(ctx, tx, sys, cmds, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func accountsOf(t testing.TB, pool *pgxpool.Pool, addr string) (user, current, preconf int64) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		SELECT u.user_id, c.account_id, p.account_id FROM users u
		JOIN accounts c ON c.user_id = u.user_id AND c.type = 1
		JOIN accounts p ON p.user_id = u.user_id AND p.type = 2 WHERE u.address = $1`, addr).Scan(&user, &current, &preconf)
	if err != nil {
		t.Fatal(err)
	}
	return
}

func balance(t *testing.T, pool *pgxpool.Pool, acc int64) (q, l decimal.Decimal) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT quantity, locked FROM account_balances WHERE account_id = $1 AND token_id = 1`, acc).Scan(&q, &l); err != nil {
		t.Fatal(err)
	}
	return
}

func lock(t *testing.T, pool *pgxpool.Pool, acc int64, qty string) {
	t.Helper()
	tag, err := pool.Exec(context.Background(), `UPDATE account_balances SET locked = locked + $2::numeric WHERE account_id = $1 AND token_id = 1 AND quantity - locked >= $2::numeric`, acc, qty)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("lock %s in %d: %v %d", qty, acc, err, tag.RowsAffected())
	}
}

func mustAudit(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	v, err := audit.Run(context.Background(), pool, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > 0 {
		t.Fatalf("audit: %v", v)
	}
}

const alice = "0x00000000000000000000000000000000000a11ce"

func TestDepositCreatesTheUserAndCreditsOnce(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	res := apply(t, pool, deposit("d1", alice, "1.5"), deposit("d1", alice, "1.5"), deposit("d2", alice, "0.25"))
	if res.Applied != 2 || res.Duplicates != 1 {
		t.Fatalf("result %+v", res)
	}
	res = apply(t, pool, deposit("d2", alice, "0.25"))
	if res.Applied != 0 || res.Duplicates != 1 {
		t.Fatalf("replay result %+v", res)
	}
	_, cur, _ := accountsOf(t, pool, alice)
	if q, _ := balance(t, pool, cur); !q.Equal(decimal.RequireFromString("1.75")) {
		t.Fatalf("balance %s", q)
	}
	var types []int
	rows, _ := pool.Query(context.Background(), `SELECT type FROM postings WHERE account_id = $1 ORDER BY posting_id`, cur)
	types, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(types) != 2 || types[0] != 8 {
		t.Fatalf("posting types %v %v", types, err)
	}
	mustAudit(t, pool)
}

func TestTransferBothWays(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	apply(t, pool, deposit("d1", alice, "2"))
	user, cur, pre := accountsOf(t, pool, alice)
	lock(t, pool, cur, "1.5")
	res := apply(t, pool, transfer(1, user, cur, pre, "1.5"))
	if res.Applied != 1 {
		t.Fatalf("result %+v", res)
	}
	lock(t, pool, pre, "0.5")
	apply(t, pool, transfer(2, user, pre, cur, "0.5"))
	q, l := balance(t, pool, cur)
	if !q.Equal(decimal.NewFromInt(1)) || !l.IsZero() {
		t.Fatalf("current %s locked %s", q, l)
	}
	if q, _ := balance(t, pool, pre); !q.Equal(decimal.NewFromInt(1)) {
		t.Fatalf("preconf %s", q)
	}
	mustAudit(t, pool)
}

func TestTransferWithoutReservationIsRejected(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	apply(t, pool, deposit("d1", alice, "2"))
	user, cur, pre := accountsOf(t, pool, alice)
	res := apply(t, pool, transfer(1, user, cur, pre, "1"), transfer(2, user+1, cur, pre, "1"))
	if res.Rejected != 2 || res.Applied != 0 {
		t.Fatalf("result %+v", res)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM journal WHERE status = 'rejected'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rejected entries %d %v", n, err)
	}
	mustAudit(t, pool)
}

func TestWithdrawalLifecycle(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := context.Background()
	apply(t, pool, deposit("d1", alice, "3"))
	user, cur, _ := accountsOf(t, pool, alice)
	newRequest := func(qty, fee string) int64 {
		lock(t, pool, cur, decimal.RequireFromString(qty).Add(decimal.RequireFromString(fee)).String())
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address)
			VALUES ($1, $2, 1, 1337, $3, $4, $5) RETURNING request_id`, user, cur, qty, fee, alice).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	debit := func(id int64) ledger.Command {
		return ledger.Command{ID: fmt.Sprintf("withdraw-%d", id), Type: topics.TypeLedgerWithdraw, At: time.Now(),
			Withdraw: &topics.LedgerWithdraw{RequestID: id, UserID: user}}
	}
	ok, bad := newRequest("1", "0.1"), newRequest("0.5", "0.1")
	apply(t, pool, debit(ok), debit(bad))
	if q, l := balance(t, pool, cur); !q.Equal(decimal.RequireFromString("1.3")) || !l.IsZero() {
		t.Fatalf("after debit %s locked %s", q, l)
	}
	mustAudit(t, pool)
	apply(t, pool,
		ledger.Command{ID: "c1", Type: topics.TypeWithdrawalConfirmed, At: time.Now(), Confirmed: &topics.WithdrawalConfirmed{RequestID: ok, TxHash: "0x1"}},
		ledger.Command{ID: "f1", Type: topics.TypeWithdrawalFailed, At: time.Now(), Failed: &topics.WithdrawalFailed{RequestID: bad, Reason: "reverted"}},
	)
	if q, _ := balance(t, pool, cur); !q.Equal(decimal.RequireFromString("1.9")) {
		t.Fatalf("after failure refund %s", q)
	}
	var s1, s2 int
	_ = pool.QueryRow(ctx, `SELECT (SELECT status FROM withdraw_requests WHERE request_id = $1), (SELECT status FROM withdraw_requests WHERE request_id = $2)`, ok, bad).Scan(&s1, &s2)
	if s1 != 10 || s2 != 104 {
		t.Fatalf("statuses %d %d", s1, s2)
	}
	mustAudit(t, pool)
}

func TestOffsetsNeverMoveBack(t *testing.T) {
	pool := pgtest.New(t, schema.Migrations())
	ctx := context.Background()
	store := func(next int64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return ledger.StoreOffsets(ctx, tx, "g", []ledger.Offset{{Topic: "t", Partition: 0, Next: next}})
		})
	}
	if err := store(10); err != nil {
		t.Fatal(err)
	}
	if err := store(5); err != ledger.ErrFenced {
		t.Fatalf("moving back: %v", err)
	}
	got, err := ledger.LoadOffsets(ctx, pool, "g")
	if err != nil || got["t"][0] != 10 {
		t.Fatalf("offsets %v %v", got, err)
	}
}
