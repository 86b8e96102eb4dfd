package settler_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler/schema"
)

// settlerProcess starts the settler binary against the broker and
// database, as the static group member kill-test: a restart takes the
// killed instance's partitions back at once.
func settlerProcess(t *testing.T, bin string, brokers []string, dbURL string) *exec.Cmd {
	t.Helper()
	return proctest.Start(t, bin, "KAFKA_BROKERS="+brokers[0], "DATABASE_URL="+dbURL, "ADMIN_ADDR=127.0.0.1:0",
		"ENVIRONMENT=dev", "SETTLER_MAX_BATCH=300", "SETTLER_INSTANCE_ID=kill-test", "LOG_LEVEL=warn")
}

// TestSettlerProcessKilledMidStream runs the settler as its own process,
// kills it with SIGKILL in the middle of a stream of thousands of ledger
// commands (no shutdown of any kind: no offset commit, no pool close),
// starts it again, and checks that every command was applied exactly once
// and that the ledger-audit command passes on the result.
func TestSettlerProcessKilledMidStream(t *testing.T) {
	const users, transfersPerUser = 40, 100
	settlerBin, auditBin := proctest.Build(t, "./cmd/settler"), proctest.Build(t, "./cmd/ledger-audit")
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	dbURL := poolURL(t, pool)

	produce(t, producer, fundingDeposits(t, users))
	first := settlerProcess(t, settlerBin, b.Addrs(), dbURL)
	waitFor(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	accs := accounts(t, pool, users)
	stream := transferStream(t, pool, accs, transfersPerUser)
	want := users + len(stream)
	produce(t, producer, stream)

	waitFor(t, "part of the stream applied", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) > users+500 })
	proctest.Kill(t, first)
	applied := count(t, pool, `SELECT count(*) FROM journal`)
	if applied >= want {
		t.Fatalf("the kill came after everything was applied (%d); make the stream longer", applied)
	}

	settlerProcess(t, settlerBin, b.Addrs(), dbURL)
	waitFor(t, "every command applied", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) == want })
	// 100 + 100 × 0.5 deposited, 100 moved to the preconf account.
	checkTransferStream(t, pool, accs, want, "50/0", fmt.Sprintf("%d/0", transfersPerUser))
	audit := exec.Command(auditBin, "-quiescent")
	audit.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	if out, err := audit.CombinedOutput(); err != nil {
		t.Fatalf("ledger-audit after the kill: %v\n%s", err, out)
	}
}
