package ledger

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"blockspace.exchange/topics"
)

// System holds the ids of the system accounts and the known tokens.
type System struct {
	Custody, Fees, InFlight int64
	Tokens                  map[int64]bool
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LoadSystem reads the system accounts created by the schema.
func LoadSystem(ctx context.Context, q Querier) (System, error) {
	s := System{Tokens: map[int64]bool{}}
	rows, err := q.Query(ctx, `SELECT type, account_id FROM accounts WHERE user_id IS NULL`)
	if err != nil {
		return s, fmt.Errorf("load system accounts: %w", err)
	}
	for rows.Next() {
		var typ, id int64
		if err := rows.Scan(&typ, &id); err != nil {
			return s, fmt.Errorf("load system accounts: %w", err)
		}
		switch typ {
		case SystemCustody:
			s.Custody = id
		case SystemFees:
			s.Fees = id
		case SystemInFlight:
			s.InFlight = id
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("load system accounts: %w", err)
	}
	if s.Custody == 0 || s.Fees == 0 || s.InFlight == 0 {
		return s, errors.New("load system accounts: the schema's system accounts are missing")
	}
	rows, err = q.Query(ctx, `SELECT token_id FROM tokens`)
	if err != nil {
		return s, fmt.Errorf("load tokens: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return s, fmt.Errorf("load tokens: %w", err)
	}
	for _, id := range ids {
		s.Tokens[id] = true
	}
	return s, nil
}

// Result counts what one Apply did.
type Result struct {
	Applied    int // commands that produced their entry now
	Duplicates int // commands applied before (or twice in the batch)
	Rejected   int // commands refused; their entry records why
	Postings   int
	// AppliedByType and RejectedByType split Applied and Rejected by
	// the commands' envelope type ("invalid" for undecodable records).
	AppliedByType, RejectedByType map[string]int
	// Entries are the journal entries this Apply created, applied or
	// rejected, so that what they posted can be read back in the same
	// transaction (the account feed does).
	Entries []int64
}

type balKey struct{ account, token int64 }

type balance struct {
	quantity, locked decimal.Decimal
	system, dirty    bool
}

type posting struct {
	entry, account, token int64
	amount, balance       decimal.Decimal
	typ                   int
	at                    time.Time
}

type account struct{ user, typ int64 }

type request struct {
	id, user, account, token, chain int64
	quantity, fee                   decimal.Decimal
	to                              string
	status                          int
	txHash                          *string
	remark                          string
	dirty                           bool
}

type rejection struct{ id, reason string }

// batch is the state of one Apply: what was read and locked, and what
// will be written.
type batch struct {
	tx       pgx.Tx
	sys      System
	entries  map[string]int64
	accounts map[int64]account
	// depositors maps a wallet address to its user and current account.
	depositors map[string][2]int64
	requests   map[int64]*request
	bals       map[balKey]*balance
	postings   []posting
	rejected   []rejection
	deposits   []Command
}

// Apply applies cmds in tx, in order: each new command becomes one journal
// entry with balanced postings, the balances of the accounts it touches
// change in the same transaction, and a command id seen before is skipped.
// Commands whose Invalid is set, or that break a rule of the ledger, are
// recorded as rejected and change nothing. Apply reads and locks every
// balance it needs with a few set-based statements, so its cost grows with
// the batch, not with round trips.
func Apply(ctx context.Context, tx pgx.Tx, sys System, cmds []Command, invalid map[string]string) (Result, error) {
	var res Result
	cmds, dups := uniqueCommands(cmds)
	res.Duplicates = dups
	b := &batch{tx: tx, sys: sys, bals: map[balKey]*balance{}, requests: map[int64]*request{}}
	if err := b.insertJournal(ctx, cmds); err != nil {
		return res, err
	}
	fresh := cmds[:0:0]
	for _, c := range cmds {
		if entry, ok := b.entries[c.ID]; ok {
			fresh = append(fresh, c)
			res.Entries = append(res.Entries, entry)
		} else {
			res.Duplicates++
		}
	}
	if len(fresh) == 0 {
		return res, nil
	}
	if err := b.prefetch(ctx, fresh, invalid); err != nil {
		return res, err
	}
	b.postings = make([]posting, 0, maxPostings(fresh))
	res.AppliedByType, res.RejectedByType = map[string]int{}, map[string]int{}
	for _, c := range fresh {
		if reason, bad := invalid[c.ID]; bad {
			b.reject(c, reason)
			res.RejectedByType[c.Type]++
			continue
		}
		if err := b.apply(c); err != nil {
			b.reject(c, err.Error())
			res.RejectedByType[c.Type]++
			continue
		}
		res.Applied++
		res.AppliedByType[c.Type]++
	}
	res.Rejected = len(b.rejected)
	res.Postings = len(b.postings)
	return res, b.write(ctx)
}

// maxPostings is the most postings cmds can produce, so that the postings
// of a batch are allocated once.
func maxPostings(cmds []Command) int {
	n := 0
	for _, c := range cmds {
		switch {
		case c.Transfer != nil, c.Deposit != nil, c.Confirmed != nil:
			n += 2
		case c.Withdraw != nil, c.Failed != nil:
			n += 4
		}
	}
	return n
}

func uniqueCommands(cmds []Command) ([]Command, int) {
	seen := make(map[string]bool, len(cmds))
	out := make([]Command, 0, len(cmds))
	for _, c := range cmds {
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	return out, len(cmds) - len(out)
}

// insertJournal claims an entry for every command id not seen before.
func (b *batch) insertJournal(ctx context.Context, cmds []Command) error {
	ids := make([]string, len(cmds))
	kinds := make([]string, len(cmds))
	ats := make([]time.Time, len(cmds))
	for i, c := range cmds {
		ids[i], kinds[i], ats[i] = c.ID, c.Type, c.At
	}
	rows, err := b.tx.Query(ctx, `
		INSERT INTO journal (command_id, kind, created)
		SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
		ON CONFLICT (command_id) DO NOTHING
		RETURNING command_id, entry_id`, ids, kinds, ats)
	if err != nil {
		return fmt.Errorf("insert journal: %w", err)
	}
	b.entries = make(map[string]int64, len(cmds))
	var id string
	var entry int64
	_, err = pgx.ForEachRow(rows, []any{&id, &entry}, func() error {
		b.entries[id] = entry
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert journal: %w", err)
	}
	return nil
}

var addressRE = regexp.MustCompile(`^0x[0-9a-f]{40}$`)

// prefetch reads the accounts, depositors and withdraw requests the
// commands name, then locks every balance they touch.
func (b *batch) prefetch(ctx context.Context, cmds []Command, invalid map[string]string) error {
	var accountIDs, requestIDs []int64
	var addresses []string
	for _, c := range cmds {
		if _, bad := invalid[c.ID]; bad {
			continue
		}
		switch {
		case c.Transfer != nil:
			accountIDs = append(accountIDs, c.Transfer.FromAccountID, c.Transfer.ToAccountID)
		case c.Withdraw != nil:
			requestIDs = append(requestIDs, c.Withdraw.RequestID)
		case c.Deposit != nil:
			if addressRE.MatchString(c.Deposit.Depositor) {
				addresses = append(addresses, c.Deposit.Depositor)
			}
		case c.Submitted != nil:
			requestIDs = append(requestIDs, c.Submitted.RequestID)
		case c.Confirmed != nil:
			requestIDs = append(requestIDs, c.Confirmed.RequestID)
		case c.Failed != nil:
			requestIDs = append(requestIDs, c.Failed.RequestID)
		}
	}
	if err := b.loadAccounts(ctx, accountIDs); err != nil {
		return err
	}
	if err := b.ensureDepositors(ctx, addresses); err != nil {
		return err
	}
	if err := b.loadRequests(ctx, requestIDs); err != nil {
		return err
	}
	return b.lockBalances(ctx, b.balanceKeys(cmds))
}

func (b *batch) loadAccounts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		b.accounts = map[int64]account{}
		return nil
	}
	// A batch names the same few accounts many times.
	slices.Sort(ids)
	ids = slices.Compact(ids)
	b.accounts = make(map[int64]account, len(ids))
	rows, err := b.tx.Query(ctx, `SELECT account_id, user_id, type FROM accounts WHERE account_id = ANY($1) AND user_id IS NOT NULL`, ids)
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	var id, user, typ int64
	_, err = pgx.ForEachRow(rows, []any{&id, &user, &typ}, func() error {
		b.accounts[id] = account{user: user, typ: typ}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	return nil
}

// ensureDepositors creates, for a wallet that never logged in, the user
// with its current and preconf trading accounts (as login does), and maps
// every depositor to its current account.
func (b *batch) ensureDepositors(ctx context.Context, addresses []string) error {
	b.depositors = map[string][2]int64{}
	if len(addresses) == 0 {
		return nil
	}
	slices.Sort(addresses)
	addresses = slices.Compact(addresses)
	_, err := b.tx.Exec(ctx, `
		WITH u AS (
			INSERT INTO users (address) SELECT unnest($1::text[])
			ON CONFLICT (address) DO NOTHING RETURNING user_id),
		a AS (
			INSERT INTO accounts (user_id, type, name)
			SELECT u.user_id, t.type, t.name FROM u
			CROSS JOIN (VALUES (1, 'Current account'), (2, 'Preconf trading account')) AS t(type, name)
			RETURNING account_id)
		INSERT INTO account_balances (account_id, token_id) SELECT account_id, 1 FROM a`, addresses)
	if err != nil {
		return fmt.Errorf("create depositors: %w", err)
	}
	rows, err := b.tx.Query(ctx, `
		SELECT u.address, u.user_id, a.account_id FROM users u
		JOIN accounts a ON a.user_id = u.user_id AND a.type = 1
		WHERE u.address = ANY($1)`, addresses)
	if err != nil {
		return fmt.Errorf("read depositors: %w", err)
	}
	var addr string
	var user, acc int64
	_, err = pgx.ForEachRow(rows, []any{&addr, &user, &acc}, func() error {
		b.depositors[addr] = [2]int64{user, acc}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read depositors: %w", err)
	}
	return nil
}

func (b *batch) loadRequests(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	rows, err := b.tx.Query(ctx, `
		SELECT request_id, user_id, account_id, token_id, chain_id, quantity, fee, to_address, status, tx_hash
		FROM withdraw_requests WHERE request_id = ANY($1) ORDER BY request_id FOR UPDATE`, ids)
	if err != nil {
		return fmt.Errorf("read withdraw requests: %w", err)
	}
	for rows.Next() {
		r := &request{}
		if err := rows.Scan(&r.id, &r.user, &r.account, &r.token, &r.chain, &r.quantity, &r.fee, &r.to, &r.status, &r.txHash); err != nil {
			rows.Close()
			return fmt.Errorf("read withdraw requests: %w", err)
		}
		b.requests[r.id] = r
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read withdraw requests: %w", err)
	}
	return nil
}

// balanceKeys lists the balances the commands may touch.
func (b *batch) balanceKeys(cmds []Command) []balKey {
	var keys []balKey
	add := func(acc, tok int64) {
		if acc != 0 && b.sys.Tokens[tok] {
			keys = append(keys, balKey{acc, tok})
		}
	}
	req := func(id int64, system ...int64) {
		if r := b.requests[id]; r != nil {
			add(r.account, r.token)
			for _, s := range system {
				add(s, r.token)
			}
		}
	}
	for _, c := range cmds {
		switch {
		case c.Transfer != nil:
			if _, ok := b.accounts[c.Transfer.FromAccountID]; ok {
				add(c.Transfer.FromAccountID, c.Transfer.TokenID)
			}
			if _, ok := b.accounts[c.Transfer.ToAccountID]; ok {
				add(c.Transfer.ToAccountID, c.Transfer.TokenID)
			}
		case c.Withdraw != nil:
			req(c.Withdraw.RequestID, b.sys.InFlight, b.sys.Fees)
		case c.Deposit != nil:
			add(b.depositors[c.Deposit.Depositor][1], c.Deposit.TokenID)
			add(b.sys.Custody, c.Deposit.TokenID)
		case c.Confirmed != nil:
			req(c.Confirmed.RequestID, b.sys.InFlight, b.sys.Custody)
		case c.Failed != nil:
			req(c.Failed.RequestID, b.sys.InFlight, b.sys.Fees)
		}
	}
	slices.SortFunc(keys, func(x, y balKey) int {
		if x.account != y.account {
			return int(sign(x.account - y.account))
		}
		return int(sign(x.token - y.token))
	})
	return slices.Compact(keys)
}

func sign(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// lockBalances creates missing balance rows and locks all of them in
// (account, token) order, the one order every settler transaction uses,
// so that concurrent batches cannot deadlock.
func (b *batch) lockBalances(ctx context.Context, keys []balKey) error {
	if len(keys) == 0 {
		return nil
	}
	accs := make([]int64, len(keys))
	toks := make([]int64, len(keys))
	for i, k := range keys {
		accs[i], toks[i] = k.account, k.token
	}
	read := func() error {
		rows, err := b.tx.Query(ctx, `
			SELECT b.account_id, b.token_id, b.quantity, b.locked, b.system
			FROM account_balances b
			JOIN unnest($1::bigint[], $2::int[]) AS k(account_id, token_id) USING (account_id, token_id)
			ORDER BY b.account_id, b.token_id FOR UPDATE OF b`, accs, toks)
		if err != nil {
			return err
		}
		var acc, tok int64
		var q, l decimal.Decimal
		var sys bool
		_, err = pgx.ForEachRow(rows, []any{&acc, &tok, &q, &l, &sys}, func() error {
			b.bals[balKey{acc, tok}] = &balance{quantity: q, locked: l, system: sys}
			return nil
		})
		return err
	}
	if err := read(); err != nil {
		return fmt.Errorf("lock balances: %w", err)
	}
	if len(b.bals) == len(keys) {
		return nil
	}
	if _, err := b.tx.Exec(ctx, `
		INSERT INTO account_balances (account_id, token_id, system)
		SELECT k.account_id, k.token_id, a.user_id IS NULL
		FROM unnest($1::bigint[], $2::int[]) AS k(account_id, token_id)
		JOIN accounts a USING (account_id)
		ORDER BY 1, 2
		ON CONFLICT DO NOTHING`, accs, toks); err != nil {
		return fmt.Errorf("create balances: %w", err)
	}
	if err := read(); err != nil {
		return fmt.Errorf("lock balances: %w", err)
	}
	return nil
}

func (b *batch) reject(c Command, reason string) {
	b.rejected = append(b.rejected, rejection{id: c.ID, reason: reason})
}

// post adds a posting and moves the balance; it never checks rules.
func (b *batch) post(c Command, acc, tok int64, amount decimal.Decimal, typ int) {
	if amount.IsZero() {
		return
	}
	bal := b.bals[balKey{acc, tok}]
	bal.quantity = bal.quantity.Add(amount)
	bal.dirty = true
	b.postings = append(b.postings, posting{entry: b.entries[c.ID], account: acc, token: tok,
		amount: amount, balance: bal.quantity, typ: typ, at: c.At})
}

func (b *batch) balance(acc, tok int64) (*balance, error) {
	bal := b.bals[balKey{acc, tok}]
	if bal == nil {
		return nil, fmt.Errorf("no balance of token %d in account %d", tok, acc)
	}
	return bal, nil
}

// release takes amount out of acc's reservation and quantity; it is how a
// reserved amount leaves a user account.
func (b *batch) release(acc, tok int64, amount decimal.Decimal) error {
	bal, err := b.balance(acc, tok)
	if err != nil {
		return err
	}
	if bal.locked.LessThan(amount) || bal.quantity.LessThan(amount) {
		return fmt.Errorf("account %d holds %s locked of %s token %d, below %s", acc, bal.locked, bal.quantity, tok, amount)
	}
	bal.locked = bal.locked.Sub(amount)
	bal.dirty = true
	return nil
}

func (b *batch) apply(c Command) error {
	switch {
	case c.Transfer != nil:
		return b.transfer(c, c.Transfer)
	case c.Withdraw != nil:
		return b.withdraw(c, c.Withdraw)
	case c.Deposit != nil:
		return b.deposit(c, c.Deposit)
	case c.Submitted != nil:
		return b.submitted(c.Submitted)
	case c.Confirmed != nil:
		return b.confirmed(c, c.Confirmed)
	case c.Failed != nil:
		return b.failed(c, c.Failed)
	}
	return fmt.Errorf("command %s has no payload", c.ID)
}

func (b *batch) transfer(c Command, t *topics.LedgerTransfer) error {
	q, err := positive(t.Quantity)
	if err != nil {
		return err
	}
	from, okFrom := b.accounts[t.FromAccountID]
	to, okTo := b.accounts[t.ToAccountID]
	switch {
	case !okFrom || !okTo || from.user != t.UserID || to.user != t.UserID:
		return fmt.Errorf("accounts %d and %d are not both of user %d", t.FromAccountID, t.ToAccountID, t.UserID)
	case t.FromAccountID == t.ToAccountID:
		return errors.New("transfer to the same account")
	case !b.sys.Tokens[t.TokenID]:
		return fmt.Errorf("unknown token %d", t.TokenID)
	}
	if err := b.release(t.FromAccountID, t.TokenID, q); err != nil {
		return err
	}
	b.post(c, t.FromAccountID, t.TokenID, q.Neg(), TypeTransferOut)
	b.post(c, t.ToAccountID, t.TokenID, q, TypeTransferIn)
	return nil
}

func (b *batch) withdraw(c Command, w *topics.LedgerWithdraw) error {
	r := b.requests[w.RequestID]
	if r == nil || r.user != w.UserID {
		return fmt.Errorf("no withdraw request %d of user %d", w.RequestID, w.UserID)
	}
	if r.status != WithdrawAccepted {
		return fmt.Errorf("withdraw request %d has status %d, not accepted", r.id, r.status)
	}
	if err := b.release(r.account, r.token, r.quantity.Add(r.fee)); err != nil {
		return err
	}
	b.post(c, r.account, r.token, r.quantity.Neg(), TypeWithdrawal)
	b.post(c, b.sys.InFlight, r.token, r.quantity, TypeWithdrawal)
	b.post(c, r.account, r.token, r.fee.Neg(), TypeWithdrawalFee)
	b.post(c, b.sys.Fees, r.token, r.fee, TypeWithdrawalFee)
	r.status, r.dirty = WithdrawDebited, true
	return nil
}

func (b *batch) deposit(c Command, d *topics.DepositObserved) error {
	q, err := positive(d.Quantity)
	if err != nil {
		return err
	}
	dep, ok := b.depositors[d.Depositor]
	if !ok {
		return fmt.Errorf("depositor %q is not a lower-case 0x address", d.Depositor)
	}
	if !b.sys.Tokens[d.TokenID] {
		return fmt.Errorf("unknown token %d", d.TokenID)
	}
	b.post(c, b.sys.Custody, d.TokenID, q.Neg(), TypeDeposit)
	b.post(c, dep[1], d.TokenID, q, TypeDeposit)
	b.deposits = append(b.deposits, c)
	return nil
}

func (b *batch) submitted(s *topics.WithdrawalSubmitted) error {
	r := b.requests[s.RequestID]
	if r == nil {
		return fmt.Errorf("no withdraw request %d", s.RequestID)
	}
	if r.status == WithdrawDebited {
		r.status, r.txHash, r.dirty = WithdrawSubmitted, &s.TxHash, true
	}
	return nil
}

func (b *batch) confirmed(c Command, e *topics.WithdrawalConfirmed) error {
	r := b.requests[e.RequestID]
	if r == nil || (r.status != WithdrawDebited && r.status != WithdrawSubmitted) {
		return fmt.Errorf("withdraw request %d is not in flight", e.RequestID)
	}
	if _, err := b.balance(b.sys.InFlight, r.token); err != nil {
		return err
	}
	b.post(c, b.sys.InFlight, r.token, r.quantity.Neg(), TypeWithdrawal)
	b.post(c, b.sys.Custody, r.token, r.quantity, TypeWithdrawal)
	r.status, r.txHash, r.dirty = WithdrawSuccess, &e.TxHash, true
	return nil
}

func (b *batch) failed(c Command, e *topics.WithdrawalFailed) error {
	r := b.requests[e.RequestID]
	if r == nil || (r.status != WithdrawDebited && r.status != WithdrawSubmitted) {
		return fmt.Errorf("withdraw request %d is not in flight", e.RequestID)
	}
	if _, err := b.balance(r.account, r.token); err != nil {
		return err
	}
	b.post(c, b.sys.InFlight, r.token, r.quantity.Neg(), TypeWithdrawal)
	b.post(c, r.account, r.token, r.quantity, TypeWithdrawal)
	b.post(c, b.sys.Fees, r.token, r.fee.Neg(), TypeWithdrawalFee)
	b.post(c, r.account, r.token, r.fee, TypeWithdrawalFee)
	r.status, r.remark, r.dirty = WithdrawFailed, e.Reason, true
	if e.TxHash != "" {
		r.txHash = &e.TxHash
	}
	return nil
}

// write stores postings, balances, rejections, deposits and request
// statuses with one statement each.
func (b *batch) write(ctx context.Context) error {
	for _, step := range []func(context.Context) error{b.writePostings, b.writeBalances, b.writeRejections, b.writeDeposits, b.writeRequests} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (b *batch) writePostings(ctx context.Context) error {
	if len(b.postings) == 0 {
		return nil
	}
	n := len(b.postings)
	entries, accs, toks, types := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	amounts, balances := make([]string, n), make([]string, n)
	ats := make([]time.Time, n)
	for i, p := range b.postings {
		entries[i], accs[i], toks[i], types[i] = p.entry, p.account, p.token, int64(p.typ)
		amounts[i], balances[i], ats[i] = p.amount.String(), p.balance.String(), p.at
	}
	_, err := b.tx.Exec(ctx, `
		INSERT INTO postings (entry_id, account_id, token_id, amount, type, balance, created)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[]::numeric[], $5::smallint[], $6::text[]::numeric[], $7::timestamptz[])`,
		entries, accs, toks, amounts, types, balances, ats)
	if err != nil {
		return fmt.Errorf("insert postings: %w", err)
	}
	return nil
}

func (b *batch) writeBalances(ctx context.Context) error {
	var accs, toks []int64
	var qs, ls []string
	for k, bal := range b.bals {
		if bal.dirty {
			accs, toks = append(accs, k.account), append(toks, k.token)
			qs, ls = append(qs, bal.quantity.String()), append(ls, bal.locked.String())
		}
	}
	if len(accs) == 0 {
		return nil
	}
	_, err := b.tx.Exec(ctx, `
		UPDATE account_balances b SET quantity = v.quantity, locked = v.locked
		FROM unnest($1::bigint[], $2::int[], $3::text[]::numeric[], $4::text[]::numeric[]) AS v(account_id, token_id, quantity, locked)
		WHERE b.account_id = v.account_id AND b.token_id = v.token_id`, accs, toks, qs, ls)
	if err != nil {
		return fmt.Errorf("update balances: %w", err)
	}
	return nil
}

func (b *batch) writeRejections(ctx context.Context) error {
	if len(b.rejected) == 0 {
		return nil
	}
	ids, reasons := make([]string, len(b.rejected)), make([]string, len(b.rejected))
	for i, r := range b.rejected {
		ids[i], reasons[i] = r.id, truncate(r.reason, 500)
	}
	_, err := b.tx.Exec(ctx, `
		UPDATE journal j SET status = 'rejected', reason = v.reason
		FROM unnest($1::text[], $2::text[]) AS v(command_id, reason) WHERE j.command_id = v.command_id`, ids, reasons)
	if err != nil {
		return fmt.Errorf("record rejected commands: %w", err)
	}
	return nil
}

// truncate bounds a reason to n bytes of valid UTF-8: Postgres refuses
// invalid text, and a refused write would stop the batch for good.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (b *batch) writeDeposits(ctx context.Context) error {
	if len(b.deposits) == 0 {
		return nil
	}
	n := len(b.deposits)
	ids, hashes, txHashes, senders, addrs, qs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	users, accs, toks, chains, blocks, txIdx, logIdx := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	ats := make([]time.Time, n)
	for i, c := range b.deposits {
		d, dep := c.Deposit, b.depositors[c.Deposit.Depositor]
		ids[i], hashes[i], txHashes[i], senders[i], addrs[i], qs[i] = c.ID, d.BlockHash, d.TransactionHash, d.Sender, d.Depositor, d.Quantity
		users[i], accs[i], toks[i], chains[i] = dep[0], dep[1], d.TokenID, d.ChainID
		blocks[i], txIdx[i], logIdx[i] = int64(d.BlockNumber), int64(d.TransactionIndex), int64(d.LogIndex)
		ats[i] = c.At
	}
	_, err := b.tx.Exec(ctx, `
		INSERT INTO deposits (command_id, user_id, account_id, token_id, chain_id, block_idx, block_hash,
		                      transaction_idx, transaction_hash, log_idx, sender_address, deposit_address, quantity, create_date)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[], $7::text[],
		                     $8::bigint[], $9::text[], $10::int[], $11::text[], $12::text[], $13::text[]::numeric[], $14::timestamptz[])`,
		ids, users, accs, toks, chains, blocks, hashes, txIdx, txHashes, logIdx, senders, addrs, qs, ats)
	if err != nil {
		return fmt.Errorf("insert deposits: %w", err)
	}
	return nil
}

func (b *batch) writeRequests(ctx context.Context) error {
	var ids, statuses []int64
	var hashes []*string
	var remarks []string
	for _, r := range b.requests {
		if r.dirty {
			ids, statuses = append(ids, r.id), append(statuses, int64(r.status))
			hashes, remarks = append(hashes, r.txHash), append(remarks, truncate(r.remark, 200))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := b.tx.Exec(ctx, `
		UPDATE withdraw_requests w SET status = v.status, tx_hash = COALESCE(v.tx_hash, w.tx_hash),
		       remark = v.remark, update_date = now()
		FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::text[]) AS v(request_id, status, tx_hash, remark)
		WHERE w.request_id = v.request_id`, ids, statuses, hashes, remarks)
	if err != nil {
		return fmt.Errorf("update withdraw requests: %w", err)
	}
	return nil
}
