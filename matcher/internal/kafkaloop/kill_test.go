package kafkaloop

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/topics"
)

// matcherEnv is the environment of the matcher binary as instance id of a
// static member against the broker.
func matcherEnv(brokers []string, id string) []string {
	return []string{"KAFKA_BROKERS=" + brokers[0], "ADMIN_ADDR=127.0.0.1:0", "ENVIRONMENT=dev",
		"MATCHER_INSTANCE_ID=" + id, "MATCHER_STATIC_MEMBER=true", "MATCHER_MAX_BATCH=50", "MATCHER_SNAPSHOT_EVERY=400", "LOG_LEVEL=warn"}
}

// matcherProcess starts the matcher binary as instance id against the
// broker.
func matcherProcess(t *testing.T, bin string, brokers []string, id string) *exec.Cmd {
	t.Helper()
	return proctest.Start(t, bin, matcherEnv(brokers, id)...)
}

// stopAfter is the environment that makes a matcher built with the
// killtest tag stop its process in the first transaction with outputs
// once it has committed n commands (stopAfterEnv).
func stopAfter(n int) string { return fmt.Sprintf("%s=%d", stopAfterEnv, n) }

// TestMatcherProcessKilledUnderLoad runs the matcher binary while commands
// are still being produced, kills it with SIGKILL in the middle of a
// transaction that has written outputs (no group leave, nothing flushed
// after), starts it again with the same instance id (a static group
// member, so it takes its partitions back at once), and checks that order
// events and fills are exactly those of an uninterrupted run, byte for
// byte: no gap, no duplicate. The killed transaction's outputs are in the
// log, behind an abort marker, and a read_committed reader never sees
// them. The binary is built with its killtest stop point, so the kill
// lands where the test names, not where it races for: in the first
// transaction with outputs after 500 commands committed, the process
// stopped there by itself.
func TestMatcherProcessKilledUnderLoad(t *testing.T) {
	bin := proctest.Build(t, "../../cmd/matcher", "killtest")
	cfg := startBroker(t)
	ctx := testContext(t)
	envs := commandStream(t, []uint64{100, 101, 117, 130}, 400)
	want := expectedOutputs(t, envs)
	quarter := len(envs) / 4
	produceCommands(t, ctx, cfg, envs[:quarter])

	first := proctest.Start(t, bin, append(matcherEnv(cfg.Brokers, "kill-test"), stopAfter(500))...)
	produced := feedWhileRunning(t, ctx, cfg, envs[quarter:], 200)
	adm, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	txn := waitStoppedInTransaction(t, ctx, adm, first, "matcher-kill-test")
	proctest.Kill(t, first)
	t.Logf("killed in a transaction with outputs on %v, %d of %d commands committed", txn.Topics.Topics(), committedInputs(ctx, adm), len(envs))

	matcherProcess(t, bin, cfg.Brokers, "kill-test")
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	got := readOutputs(t, ctx, cfg)
	assertSameOutputs(t, got, want)
	assertAbortedOutputs(t, ctx, cfg, got)
}

// feedWhileRunning produces envs in batches of batch commands while the
// matchers work; the channel gets the first error, or nil once all are
// produced.
func feedWhileRunning(t *testing.T, ctx context.Context, cfg kafka.Config, envs []topics.Envelope, batch int) <-chan error {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs := commandRecords(t, envs)
	produced := make(chan error, 1)
	go func() {
		defer cl.Close()
		for start := 0; start < len(recs); start += batch {
			if err := cl.ProduceSync(ctx, recs[start:min(start+batch, len(recs))]...).FirstErr(); err != nil {
				produced <- err
				return
			}
		}
		produced <- nil
	}()
	return produced
}

// waitStoppedInTransaction waits until proc, started with stopAfter, has
// stopped itself, and checks that the transaction coordinator lists its
// transaction txnID Ongoing with outputs in order-events or fills: the
// process can send nothing more, so the transaction stays so until the
// test kills or wakes it.
func waitStoppedInTransaction(t *testing.T, ctx context.Context, cl *kgo.Client, proc *exec.Cmd, txnID string) kadm.DescribedTransaction {
	t.Helper()
	poll.Until(t, "the matcher stopped at its stop point", func() bool { return stopped(proc.Process.Pid) })
	adm := kadm.NewClient(cl)
	var txn kadm.DescribedTransaction
	poll.Until(t, "the stopped matcher's transaction described", func() bool {
		d, err := adm.DescribeTransactions(ctx, txnID)
		txn = d[txnID]
		return err == nil && txn.Err == nil
	})
	if txn.State != "Ongoing" || len(txn.Topics[topics.OrderEvents]) == 0 && len(txn.Topics[topics.Fills]) == 0 {
		t.Fatalf("the matcher stopped with its transaction %s %s on %v; want it Ongoing with outputs", txnID, txn.State, txn.Topics.Topics())
	}
	return txn
}

// stopped reports whether the process pid is stopped by a signal (state T
// in /proc/pid/stat).
func stopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, in parentheses, and a space.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'T'
}

// assertAbortedOutputs reads order-events and fills read_uncommitted,
// markers included, and checks that they hold records of an aborted
// transaction, behind an abort marker, beyond committed: what a
// read_committed reader got. That reader got exactly the outputs of an
// uninterrupted run (assertSameOutputs), so the aborted records were left
// out of it.
func assertAbortedOutputs(t *testing.T, ctx context.Context, cfg kafka.Config, committed map[partitionKey][][]byte) {
	t.Helper()
	var records, aborts, want int
	for _, v := range committed {
		want += len(v)
	}
	for _, topic := range []string{topics.OrderEvents, topics.Fills} {
		for _, r := range readUncommitted(t, ctx, cfg, topic) {
			switch {
			case !r.Attrs.IsControl():
				records++
			case len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:4]) == 0:
				aborts++
			}
		}
	}
	if aborts == 0 || records <= want {
		t.Fatalf("the outputs hold %d abort markers and %d records, %d of them committed: no aborted transaction wrote outputs", aborts, records, want)
	}
	t.Logf("%d abort markers; %d output records in the log, %d of them committed", aborts, records, want)
}

// readUncommitted returns every record of topic below its high watermark,
// as a read_uncommitted reader sees them: aborted records and markers too.
func readUncommitted(t *testing.T, ctx context.Context, cfg kafka.Config, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return kafkatest.ReadUncommitted(ctx, t, cl, topic)
}

// A matcher instance that freezes in the middle of a transaction (SIGSTOP:
// a hung host, a long pause) while its replacement starts with the same
// instance id is a zombie: the replacement takes its transactional id,
// which aborts the zombie's open transaction and fences its producer, and
// its place in the group, and goes on matching. When the zombie wakes up
// (SIGCONT) it cannot commit anything: it finds itself fenced and exits
// with an error. A second instance trades its own partitions throughout.
// Order events and fills are byte for byte those of an uninterrupted run,
// and the zombie's outputs stay behind an abort marker. The zombie freezes
// at its killtest stop point: in its first transaction with outputs after
// it committed 200 commands.
func TestZombieMatcherIsFenced(t *testing.T) {
	bin := proctest.Build(t, "../../cmd/matcher", "killtest")
	cfg := startBroker(t)
	ctx := testContext(t)
	envs := commandStream(t, everyPartition(), 100)
	want := expectedOutputs(t, envs)
	quarter := len(envs) / 4
	produceCommands(t, ctx, cfg, envs[:quarter])

	zombie := startLogged(t, bin, append(matcherEnv(cfg.Brokers, "zombie"), stopAfter(200)))
	matcherProcess(t, bin, cfg.Brokers, "steady")
	produced := feedWhileRunning(t, ctx, cfg, envs[quarter:], 100)
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const txnID = "matcher-zombie"
	frozen := waitStoppedInTransaction(t, ctx, cl, zombie.cmd, txnID)

	// The replacement fences the zombie's producer: the coordinator aborts
	// the open transaction with a higher epoch, and every transaction the
	// replacement commits raises it further.
	matcherProcess(t, bin, cfg.Brokers, "zombie")
	adm := kadm.NewClient(cl)
	for {
		d, err := adm.DescribeTransactions(ctx, txnID)
		if txn := d[txnID]; err == nil && txn.Err == nil && txn.ProducerEpoch > frozen.ProducerEpoch+1 && txn.State == "CompleteCommit" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the replacement never committed a transaction (last error %v)", err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	if err := zombie.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-zombie.exited:
	case <-ctx.Done():
		t.Fatal("the zombie went on running after it woke up")
	}
	if code := zombie.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(zombie.output(), "FENCED") {
		t.Fatalf("the zombie exited with status %d; want an error saying it was fenced:\n%s", code, zombie.output())
	}
	t.Logf("the zombie ended: %s", lastLine(zombie.output()))

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	got := readOutputs(t, ctx, cfg)
	assertSameOutputs(t, got, want)
	assertAbortedOutputs(t, ctx, cfg, got)
}

// loggedProcess is a process of the test whose output is kept, and whose
// exit is awaited by one goroutine.
type loggedProcess struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process ended and was reaped
	mu     sync.Mutex
	out    bytes.Buffer
}

func (p *loggedProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *loggedProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startLogged starts bin like proctest.Start, keeping its output for the
// test to read; it is killed when the test ends.
func startLogged(t *testing.T, bin string, env []string) *loggedProcess {
	t.Helper()
	p := &loggedProcess{cmd: exec.Command(bin), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("pid %d output:\n%s", p.cmd.Process.Pid, p.output())
		}
	})
	return p
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// committedInputs is how many orders records the matcher group has
// committed, in the transactions that published their outputs; 0 while
// the group cannot be asked.
func committedInputs(ctx context.Context, cl *kgo.Client) int64 {
	n, _ := kafkatest.Committed(ctx, cl, DefaultGroup, topics.Orders)
	return n
}

// A zombie that froze while it had nothing to do, and wakes up after its
// replacement took its place, holds no transaction to be fenced by: what
// tells it is the group, which refuses its heartbeat because another
// process joined with its static instance id. It exits at once, instead
// of joining again, which would take the partitions back from its
// replacement and leave their commands unserved, and the replacement goes
// on matching.
func TestIdleZombieMatcherExits(t *testing.T) {
	bin := proctest.Build(t, "../../cmd/matcher")
	cfg := startBroker(t)
	ctx := testContext(t)
	envs := commandStream(t, everyPartition(), 50)
	want := expectedOutputs(t, envs)
	first, second, third := envs[:len(envs)/3], envs[len(envs)/3:2*len(envs)/3], envs[2*len(envs)/3:]
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	produceCommands(t, ctx, cfg, first)
	zombie := startLogged(t, bin, matcherEnv(cfg.Brokers, "zombie"))
	matcherProcess(t, bin, cfg.Brokers, "steady")
	kafkatest.WaitConsumed(ctx, t, cl, DefaultGroup, topics.Orders)
	frozen := memberOf(t, ctx, adm, "matcher-zombie")
	if err := zombie.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	matcherProcess(t, bin, cfg.Brokers, "zombie")
	replacement := frozen
	for replacement == frozen || replacement == "" {
		select {
		case <-ctx.Done():
			t.Fatal("the replacement never joined the group")
		case <-time.After(20 * time.Millisecond):
		}
		replacement = memberOf(t, ctx, adm, "matcher-zombie")
	}

	if err := zombie.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-zombie.exited:
	case <-ctx.Done():
		t.Fatal("the zombie went on running after it woke up")
	}
	if code := zombie.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(zombie.output(), "FENCED_INSTANCE_ID") {
		t.Fatalf("the zombie exited with status %d; want an error saying its instance id was taken:\n%s", code, zombie.output())
	}
	t.Logf("the zombie ended: %s", lastLine(zombie.output()))
	if m := memberOf(t, ctx, adm, "matcher-zombie"); m != replacement {
		t.Fatalf("the group's member matcher-zombie is %q, not the replacement %s", m, replacement)
	}

	produceCommands(t, ctx, cfg, second)
	produceCommands(t, ctx, cfg, third)
	assertSameOutputs(t, readOutputs(t, ctx, cfg), want)
}

// everyPartition returns a slot on each partition of orders, so that
// every instance of a group has work.
func everyPartition() []uint64 {
	slots := make([]uint64, 16)
	for i := range slots {
		slots[i] = uint64(100 + i)
	}
	return slots
}

// memberOf returns the member id of the matcher group's static member
// instance, "" while it has none.
func memberOf(t *testing.T, ctx context.Context, adm *kadm.Client, instance string) string {
	t.Helper()
	groups, err := adm.DescribeGroups(ctx, DefaultGroup)
	if err != nil {
		return ""
	}
	for _, m := range groups[DefaultGroup].Members {
		if m.InstanceID != nil && *m.InstanceID == instance {
			return m.MemberID
		}
	}
	return ""
}
