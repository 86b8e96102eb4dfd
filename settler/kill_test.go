package settler_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

// buildCommands builds the settler and ledger-audit binaries once for the
// test.
func buildCommands(t *testing.T) (settlerBin, auditBin string) {
	t.Helper()
	dir := t.TempDir()
	settlerBin, auditBin = filepath.Join(dir, "settler"), filepath.Join(dir, "ledger-audit")
	for bin, pkg := range map[string]string{settlerBin: "./cmd/settler", auditBin: "./cmd/ledger-audit"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return settlerBin, auditBin
}

// settlerProcess starts the settler binary against the broker and
// database; its output goes to the test log when the test fails.
func settlerProcess(t *testing.T, bin string, brokers []string, dbURL string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+brokers[0], "DATABASE_URL="+dbURL, "ADMIN_ADDR=127.0.0.1:0",
		"ENVIRONMENT=dev", "SETTLER_MAX_BATCH=300", "LOG_LEVEL=warn")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("settler %d output:\n%s", cmd.Process.Pid, out.String())
		}
	})
	return cmd
}

// TestSettlerProcessKilledMidStream runs the settler as its own process,
// kills it with SIGKILL in the middle of a stream of thousands of ledger
// commands (no shutdown of any kind: no offset commit, no pool close),
// starts it again, and checks that every command was applied exactly once
// and that the ledger-audit command passes on the result.
func TestSettlerProcessKilledMidStream(t *testing.T) {
	const users, transfersPerUser = 40, 100
	settlerBin, auditBin := buildCommands(t)
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	dbURL := poolURL(t, pool)
	ctx := t.Context()

	var funding []*kgo.Record
	for u := range users {
		funding = append(funding, depositRecord(t, u, u, "100"))
	}
	produce(t, producer, funding)
	first := settlerProcess(t, settlerBin, b.Addrs(), dbURL)
	waitFor(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	accs := accounts(t, pool, users)
	// Reserve what the transfers move, as ingress would.
	if _, err := pool.Exec(ctx, `UPDATE account_balances SET locked = $1 WHERE account_id IN (SELECT account_id FROM accounts WHERE type = 1 AND user_id IS NOT NULL)`, transfersPerUser); err != nil {
		t.Fatal(err)
	}
	var stream []*kgo.Record
	id := 0
	for i := range transfersPerUser {
		for u, a := range accs {
			id++
			stream = append(stream, record(t, topics.LedgerCommands, topics.UserKey(a.user), topics.TypeLedgerTransfer, fmt.Sprintf("transfer-%d", id),
				topics.LedgerTransfer{TransferID: int64(id), UserID: a.user, FromAccountID: a.current, ToAccountID: a.preconf, TokenID: 1, Quantity: "1"}))
			stream = append(stream, depositRecord(t, users+i*users+u, u, "0.5"))
		}
	}
	want := users + len(stream)
	produce(t, producer, stream)

	waitFor(t, "part of the stream applied", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) > users+500 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	applied := count(t, pool, `SELECT count(*) FROM journal`)
	if applied >= want {
		t.Fatalf("the kill came after everything was applied (%d); make the stream longer", applied)
	}

	settlerProcess(t, settlerBin, b.Addrs(), dbURL)
	waitFor(t, "every command applied", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) == want })
	if n := count(t, pool, `SELECT count(*) FROM postings`); n != 2*want {
		t.Fatalf("%d postings, want %d", n, 2*want)
	}
	if n := count(t, pool, `SELECT count(*) FROM journal WHERE status <> 'applied'`); n != 0 {
		t.Fatalf("%d commands rejected", n)
	}
	for _, a := range accs {
		var cur, pre string
		if err := pool.QueryRow(ctx, `SELECT
			(SELECT quantity || '/' || locked FROM account_balances WHERE account_id = $1),
			(SELECT quantity || '/' || locked FROM account_balances WHERE account_id = $2)`, a.current, a.preconf).Scan(&cur, &pre); err != nil {
			t.Fatal(err)
		}
		// 100 + 100 × 0.5 deposited, 100 moved to the preconf account.
		if cur != "50/0" || pre != fmt.Sprintf("%d/0", transfersPerUser) {
			t.Fatalf("user %d: current %s preconf %s", a.user, cur, pre)
		}
	}
	audit := exec.Command(auditBin, "-quiescent")
	audit.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	if out, err := audit.CombinedOutput(); err != nil {
		t.Fatalf("ledger-audit after the kill: %v\n%s", err, out)
	}
}
