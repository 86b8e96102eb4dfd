package settler_test

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/settler/schema"
)

// staticMember returns the member id under which instance is a member of
// group, "" while it is none.
func staticMember(t *testing.T, cl *kgo.Client, group, instance string) string {
	t.Helper()
	groups, err := kadm.NewClient(cl).DescribeGroups(t.Context(), group)
	if err != nil {
		return ""
	}
	for _, m := range groups[group].Members {
		if m.InstanceID != nil && *m.InstanceID == instance {
			return m.MemberID
		}
	}
	return ""
}

// watchExit waits for cmd in the background and closes the channel it
// returns when the process has ended.
func watchExit(cmd *exec.Cmd) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited
}

// A settler instance frozen while a replacement joins under its instance
// id (a paused VM, a node partitioned away while the orchestrator started
// the instance elsewhere) is fenced by its groups when it wakes up. It
// exits, saying so, instead of joining again under the same id, which
// would take the partitions back from its replacement, which would then
// join again too, the two instances taking turns. The replacement stays
// the member of both groups and applies the whole stream once.
func TestFrozenSettlerReplacedUnderItsInstanceIDExits(t *testing.T) {
	const users, transfersPerUser = 20, 20
	settlerBin := proctest.Build(t, "./cmd/settler")
	b, producer := startBroker(t)
	pool := pgtest.New(t, schema.Migrations())
	dbURL := poolURL(t, pool)

	produce(t, producer, fundingDeposits(t, users))
	zombie := settlerProcess(t, settlerBin, b.Addrs(), dbURL, 300)
	exited := watchExit(zombie)
	poll.Until(t, "funding deposits", func() bool { return count(t, pool, `SELECT count(*) FROM deposits`) == users })
	frozen := map[string]string{}
	for _, g := range []string{settlerGroup, tradingGroup} {
		poll.Until(t, "the first instance a member of "+g, func() bool {
			frozen[g] = staticMember(t, producer, g, "kill-test")
			return frozen[g] != ""
		})
	}
	if err := zombie.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	settlerProcess(t, settlerBin, b.Addrs(), dbURL, 300)
	replacement := map[string]string{}
	for _, g := range []string{settlerGroup, tradingGroup} {
		poll.Until(t, "the replacement a member of "+g, func() bool {
			replacement[g] = staticMember(t, producer, g, "kill-test")
			return replacement[g] != "" && replacement[g] != frozen[g]
		})
	}
	if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(90 * time.Second):
		// Killed and waited for here, so that nothing else waits for it.
		_ = zombie.Process.Kill()
		<-exited
		t.Fatalf("the woken instance went on running:\n%s", zombie.Stdout.(*bytes.Buffer))
	}
	out := zombie.Stdout.(*bytes.Buffer).String()
	if code := zombie.ProcessState.ExitCode(); code == 0 || !strings.Contains(out, "FENCED_INSTANCE_ID") {
		t.Fatalf("the woken instance exited with status %d; want an error naming its fenced instance id:\n%s", code, out)
	}

	accs := accounts(t, pool, users)
	stream := transferStream(t, pool, accs, transfersPerUser)
	want := users + len(stream)
	produce(t, producer, stream)
	poll.Until(t, "every command applied", func() bool { return count(t, pool, `SELECT count(*) FROM journal`) == want })
	checkTransferStream(t, pool, accs, want, "90/0", "20/0")
	for _, g := range []string{settlerGroup, tradingGroup} {
		if m := staticMember(t, producer, g, "kill-test"); m != replacement[g] {
			t.Fatalf("the member kill-test of %s is %q, not the replacement %s", g, m, replacement[g])
		}
	}
}
