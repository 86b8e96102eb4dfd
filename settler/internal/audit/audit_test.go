package audit_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/internal/audit"
	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	alice = "0x00000000000000000000000000000000000a11ce"
	bob   = "0x0000000000000000000000000000000000000b0b"
)

// book is a ledger written by the settler's own code: two deposits, a
// transfer, a withdrawal debited and in flight, and one accepted with its
// funds locked. Every invariant holds, the exact locks included.
type book struct {
	pool                   *pgxpool.Pool
	aliceCurrent, alicePre int64
	bobCurrent             int64
}

func newBook(t *testing.T) *book {
	t.Helper()
	b := &book{pool: pgtest.New(t, schema.Migrations())}
	at := time.Now()
	deposit := func(id, addr, qty string) ledger.Command {
		return ledger.Command{ID: id, Type: topics.TypeDepositObserved, At: at, Deposit: &topics.DepositObserved{
			ChainID: 1337, BlockNumber: 5, BlockHash: "0xb", TransactionHash: "0x" + id, Sender: addr, Depositor: addr,
			TokenID: 1, Quantity: qty, AmountWei: "1"}}
	}
	b.apply(t, deposit("d1", alice, "3"), deposit("d2", bob, "1"))
	var user int64
	b.scan(t, `SELECT u.user_id, c.account_id, p.account_id FROM users u
		JOIN accounts c ON c.user_id = u.user_id AND c.type = 1 JOIN accounts p ON p.user_id = u.user_id AND p.type = 2
		WHERE u.address = $1`, []any{alice}, &user, &b.aliceCurrent, &b.alicePre)
	b.scan(t, `SELECT c.account_id FROM users u JOIN accounts c ON c.user_id = u.user_id AND c.type = 1 WHERE u.address = $1`, []any{bob}, &b.bobCurrent)

	b.exec(t, `UPDATE account_balances SET locked = locked + 0.5 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
	b.apply(t, ledger.Command{ID: "transfer-1", Type: topics.TypeLedgerTransfer, At: at, Transfer: &topics.LedgerTransfer{
		TransferID: 1, UserID: user, FromAccountID: b.aliceCurrent, ToAccountID: b.alicePre, TokenID: 1, Quantity: "0.5"}})

	withdraw := func(qty, fee string) int64 {
		b.exec(t, `UPDATE account_balances SET locked = locked + $2::numeric + $3::numeric WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent, qty, fee)
		var id int64
		b.scan(t, `INSERT INTO withdraw_requests (user_id, account_id, token_id, chain_id, quantity, fee, to_address)
			VALUES ($1, $2, 1, 1337, $3, $4, $5) RETURNING request_id`, []any{user, b.aliceCurrent, qty, fee, alice}, &id)
		return id
	}
	debited := withdraw("1", "0.1")
	withdraw("0.25", "0.05") // accepted: stays locked
	b.apply(t, ledger.Command{ID: fmt.Sprintf("withdraw-%d", debited), Type: topics.TypeLedgerWithdraw, At: at,
		Withdraw: &topics.LedgerWithdraw{RequestID: debited, UserID: user}})
	return b
}

func (b *book) apply(t *testing.T, cmds ...ledger.Command) {
	t.Helper()
	ctx := t.Context()
	sys, err := ledger.LoadSystem(ctx, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		res, err := ledger.Apply(ctx, tx, sys, cmds, nil)
		if err == nil && res.Applied != len(cmds) {
			err = fmt.Errorf("applied %+v of %d commands", res, len(cmds))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (b *book) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (b *book) scan(t *testing.T, sql string, args []any, dest ...any) {
	t.Helper()
	if err := b.pool.QueryRow(t.Context(), sql, args...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// post writes one journal entry as the settler would, with consistent
// postings and balances, but with whatever amounts it is given: balanced
// or not, overdrawing or not.
func (b *book) post(t *testing.T, amounts map[int64]string) {
	t.Helper()
	ctx := t.Context()
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var entry int64
		if err := tx.QueryRow(ctx, `INSERT INTO journal (command_id, kind) VALUES ('manual-' || gen_random_uuid(), 'ledger.transfer') RETURNING entry_id`).Scan(&entry); err != nil {
			return err
		}
		for _, acc := range slices.Sorted(maps.Keys(amounts)) {
			_, err := tx.Exec(ctx, `
				WITH b AS (UPDATE account_balances SET quantity = quantity + $3::numeric WHERE account_id = $2 AND token_id = 1 RETURNING quantity)
				INSERT INTO postings (entry_id, account_id, token_id, amount, type, balance) SELECT $1, $2, 1, $3::numeric, 7, quantity FROM b`,
				entry, acc, amounts[acc])
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dropCheck removes a constraint of account_balances, so that a state the
// schema forbids (as on a database restored without its constraints, or
// changed by hand) can be written and the audit seen to catch it.
func (b *book) dropCheck(t *testing.T, name string) {
	t.Helper()
	b.exec(t, `ALTER TABLE account_balances DROP CONSTRAINT `+name)
}

func TestCleanLedgerPasses(t *testing.T) {
	b := newBook(t)
	for _, modes := range [][]audit.Mode{nil, {audit.Quiescent}} {
		v, err := audit.Run(t.Context(), b.pool, 10, modes...)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > 0 {
			t.Fatalf("modes %v: violations on a clean ledger: %v", modes, v)
		}
	}
	var locksHeld bool
	b.scan(t, `SELECT locked = 0.3 AND locked = (SELECT sum(quantity + fee) FROM withdraw_requests WHERE status = 0) FROM account_balances
		WHERE account_id = $1 AND token_id = 1`, []any{b.aliceCurrent}, &locksHeld)
	if !locksHeld {
		t.Fatal("the clean ledger does not lock exactly alice's accepted withdrawal, so the exact check was not exercised")
	}
}

// TestViolationsAreFound breaks one invariant per case and expects
// exactly the checks that judge it, each naming the account or token.
func TestViolationsAreFound(t *testing.T) {
	tests := []struct {
		name   string
		modes  []audit.Mode
		breaks func(t *testing.T, b *book)
		want   []string // check names reported
		detail string   // in every violation; %d is alice's current account
	}{
		{
			name:   "a token does not sum to zero",
			breaks: func(t *testing.T, b *book) { b.post(t, map[int64]string{b.aliceCurrent: "1"}) },
			want:   []string{"token sums are zero", "entries balance"},
			detail: "token 1",
		},
		{
			name: "locked above quantity",
			breaks: func(t *testing.T, b *book) {
				b.dropCheck(t, "account_balances_locked_within_quantity")
				b.exec(t, `UPDATE account_balances SET locked = quantity + 1 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
			},
			want:   []string{"user balances not negative"},
			detail: "account %d token 1",
		},
		{
			name: "a balanced entry overdraws a user",
			breaks: func(t *testing.T, b *book) {
				b.dropCheck(t, "account_balances_quantity_nonnegative")
				b.dropCheck(t, "account_balances_locked_within_quantity") // locked 0 > quantity -2
				b.post(t, map[int64]string{b.bobCurrent: "-3", b.aliceCurrent: "3"})
			},
			want:   []string{"user balances not negative"},
			detail: "quantity -2",
		},
		{
			name: "a balance moved without postings",
			breaks: func(t *testing.T, b *book) {
				b.exec(t, `UPDATE account_balances SET quantity = quantity + 0.5 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
				b.exec(t, `UPDATE account_balances SET quantity = quantity - 0.5 WHERE account_id = $1 AND token_id = 1`, b.bobCurrent)
			},
			want:   []string{"balances match the journal"},
			detail: "token 1 balance",
		},
		{
			name: "an account transaction's balance is not its running sum",
			breaks: func(t *testing.T, b *book) {
				b.exec(t, `UPDATE postings SET balance = balance + 1 WHERE posting_id = (SELECT min(posting_id) FROM postings WHERE account_id = $1)`, b.aliceCurrent)
			},
			want:   []string{"account transactions carry running balances"},
			detail: "running sum",
		},
		{
			name: "locked below the open reservations",
			breaks: func(t *testing.T, b *book) {
				b.exec(t, `UPDATE account_balances SET locked = 0 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
			},
			want:   []string{"locked funds cover the open reservations"},
			detail: "account %d token 1 locks 0",
		},
		{
			name: "locked above the open reservations, not quiescent",
			breaks: func(t *testing.T, b *book) {
				b.exec(t, `UPDATE account_balances SET locked = locked + 0.1 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
			},
			want: nil, // a transfer in flight locks funds no row records
		},
		{
			name:  "locked above the open reservations, quiescent",
			modes: []audit.Mode{audit.Quiescent},
			breaks: func(t *testing.T, b *book) {
				b.exec(t, `UPDATE account_balances SET locked = locked + 0.1 WHERE account_id = $1 AND token_id = 1`, b.aliceCurrent)
			},
			want:   []string{"locked funds are exactly the open reservations"},
			detail: "account %d token 1 locks 0.4,",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBook(t)
			tt.breaks(t, b)
			v, err := audit.Run(t.Context(), b.pool, 10, tt.modes...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range v {
				if !slices.Contains(got, x.Check) {
					got = append(got, x.Check)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Fatalf("checks reported %q, want %q; violations: %v", got, want, v)
			}
			detail := tt.detail
			if strings.Contains(detail, "%d") {
				detail = fmt.Sprintf(detail, b.aliceCurrent)
			}
			for _, x := range v {
				if !strings.Contains(x.Detail, detail) {
					t.Errorf("violation %q does not say %q", x, detail)
				}
			}
		})
	}
}

// TestRunLimitsViolationsPerCheck: -limit bounds each check's rows, not
// the report.
func TestRunLimitsViolationsPerCheck(t *testing.T) {
	b := newBook(t)
	b.exec(t, `UPDATE postings SET balance = balance + 1`)
	var postings int
	b.scan(t, `SELECT count(*) FROM postings`, nil, &postings)
	if postings < 3 {
		t.Fatalf("the book has %d postings; the test needs more than the limit", postings)
	}
	v, err := audit.Run(t.Context(), b.pool, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 {
		t.Fatalf("%d violations with limit 2: %v", len(v), v)
	}
}
