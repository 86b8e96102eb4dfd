package settlementtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/settler/internal/ledger"
	"blockspace.exchange/topics"
)

// Fund creates n users through deposits of amount ETH each, moves it all
// to their preconf trading accounts with transfers, as a user would, and
// returns those accounts. Ids are the same in every new database.
func Fund(t testing.TB, pool *pgxpool.Pool, n int, amount string) []Account {
	t.Helper()
	ctx := context.Background()
	sys, err := ledger.LoadSystem(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var deposits []ledger.Command
	for i := range n {
		addr := fmt.Sprintf("0x%040x", 0x7ade0000+i)
		deposits = append(deposits, ledger.Command{ID: "deposit-" + addr, Type: topics.TypeDepositObserved, At: time.Now(),
			Deposit: &topics.DepositObserved{ChainID: 1337, BlockHash: "0xb", TransactionHash: "0x" + addr[2:], Sender: addr,
				Depositor: addr, TokenID: 1, Quantity: amount, AmountWei: "1"}})
	}
	applyLedger(t, pool, sys, deposits)
	rows, err := pool.Query(ctx, `
		SELECT u.user_id, c.account_id, p.account_id FROM users u
		JOIN accounts c ON c.user_id = u.user_id AND c.type = 1
		JOIN accounts p ON p.user_id = u.user_id AND p.type = 2
		WHERE u.address LIKE '0x%7ade%' ORDER BY u.user_id`)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Account, 0, n)
	var transfers []ledger.Command
	var user, current, preconf int64
	_, err = pgx.ForEachRow(rows, []any{&user, &current, &preconf}, func() error {
		out = append(out, Account{User: user, Account: preconf})
		transfers = append(transfers, ledger.Command{ID: fmt.Sprintf("transfer-fund-%d", user), Type: topics.TypeLedgerTransfer, At: time.Now(),
			Transfer: &topics.LedgerTransfer{UserID: user, FromAccountID: current, ToAccountID: preconf, TokenID: 1, Quantity: amount}})
		return nil
	})
	if err != nil || len(out) != n {
		t.Fatalf("funded users: %d of %d: %v", len(out), n, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE account_balances b SET locked = quantity FROM accounts a
		WHERE a.account_id = b.account_id AND a.type = 1 AND a.user_id IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	applyLedger(t, pool, sys, transfers)
	return out
}

func applyLedger(t testing.TB, pool *pgxpool.Pool, sys ledger.System, cmds []ledger.Command) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res, err := ledger.Apply(ctx, tx, sys, cmds, nil)
		if err == nil && res.Applied != len(cmds) {
			err = fmt.Errorf("applied %d of %d funding commands: %+v", res.Applied, len(cmds), res)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// InsertOrders writes the orders as ingress does when it accepts them: for
// a buy, locked += Reserved on the trading account where available, and
// the orders row (status 0, reserved set), in one transaction.
func InsertOrders(t testing.TB, pool *pgxpool.Pool, orders ...*Order) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Lock the buyers' balances in account order first, as ingress
		// does, so that a settler locking them in key order meanwhile
		// cannot deadlock with this transaction.
		var buyers []int64
		for _, o := range orders {
			if o.Buy {
				buyers = append(buyers, o.Acc.Account)
			}
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM account_balances WHERE account_id = ANY($1) AND token_id = 1
			ORDER BY account_id FOR UPDATE`, buyers); err != nil {
			return err
		}
		for _, o := range orders {
			if o.Buy {
				tag, err := tx.Exec(ctx, `UPDATE account_balances SET locked = locked + $2::numeric
					WHERE account_id = $1 AND token_id = 1 AND quantity - locked >= $2::numeric`, o.Acc.Account, o.Reserved.String())
				if err != nil {
					return err
				}
				if tag.RowsAffected() != 1 {
					return fmt.Errorf("%s: account %d cannot reserve %s", o, o.Acc.Account, o.Reserved)
				}
			}
			var client *string
			if o.ClientID != "" {
				client = &o.ClientID
			}
			// Ingress writes the row before the matcher sees the order;
			// an old date keeps that true for records of any time.
			_, err := tx.Exec(ctx, `
				INSERT INTO orders (order_id, user_id, account_id, market_id, instrument_id, slot, side, order_type, price, quantity,
				                    client_order_id, reserved, create_date, update_date)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10::numeric, $11, $12::numeric, '2000-01-01', '2000-01-01')`,
				o.ID, o.Acc.User, o.Acc.Account, topics.MarketID(o.Family, o.Slot), o.Instrument, int64(o.Slot), o.Buy, o.Type,
				o.Price.String(), o.Quantity.String(), client, o.Reserved.String())
			if err != nil {
				return fmt.Errorf("insert %s: %w", o, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Snapshot is the trading state of a database as text, without the ids
// and times that depend on the order records were applied in: orders,
// trades, positions, balances, and the postings of each fill.
func Snapshot(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT order_id, status, fulfilled, average_trade_price, fees, error_code, reason, reserved, spent, released,
		        settled_quantity, settled_value, order_type, price, quantity, update_date FROM orders ORDER BY order_id`,
		`SELECT trade_id, instrument_id, price, quantity, preconf_quantity, side, primary_sale, taker_order_id, maker_order_id,
		        buyer_account_id, seller_account_id, buyer_fee, seller_fee, executed_at FROM trades ORDER BY trade_id`,
		`SELECT account_id, instrument_id, quantity, locked, average_price, bought_quantity, bought_value, expired, update_date
		 FROM positions ORDER BY account_id, instrument_id`,
		`SELECT account_id, token_id, quantity, locked FROM account_balances ORDER BY account_id, token_id`,
		`SELECT j.command_id, j.status, p.account_id, p.type, p.amount FROM journal j LEFT JOIN postings p USING (entry_id)
		 WHERE j.kind = 'trade.executed' ORDER BY j.command_id, p.account_id, p.type, p.amount`,
		`SELECT slot, seller_account_id, total_preconf, phase, opened_at, closed_at, issued FROM trading_slots ORDER BY slot`,
		`SELECT count(*) FROM parked_fills`,
	} {
		rows, err := pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if n, ok := v.(pgtype.Numeric); ok {
					vals[i], _ = n.Value()
				}
			}
			fmt.Fprintln(&b, vals...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		b.WriteString("--\n")
	}
	return b.String()
}

// Diff lists the lines of two snapshots that differ, got first.
func Diff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "line %d\n  got  %s\n  want %s\n", i+1, gl, wl)
		}
	}
	return b.String()
}
