// Package krafttest gives tests the test binary's one Apache Kafka broker
// (a kraft node), emptied for each test that takes it. Package kafkatest
// builds on it with the catalog's topics; platform/kafka's own tests, which
// kafkatest cannot serve (it imports platform/kafka), use it directly.
package krafttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"blockspace.exchange/platform/kafka/kraft"
)

// shared is the broker of this test binary, started on first use, and the
// test that holds it. It is the package's only mutable state: one JVM per
// binary instead of one per test is what keeps many small tests cheap, as
// pgtest's one cluster per binary does for PostgreSQL.
var shared struct {
	once sync.Once
	c    *kraft.Cluster
	dir  string
	err  error

	// turn is held by the test that uses the broker (one at a time: each
	// starts from an empty log); holder is that test, for a second call.
	turn   chan struct{}
	mu     sync.Mutex
	holder testing.TB
}

// Keep names topics, with their partition counts, that an emptying may
// leave in place when no record or marker was ever written to them:
// deleting and creating a hundred partitions is most of what emptying the
// broker costs, and most tests write to few topics.
type Keep map[string]int32

// Shared returns the addresses of the test binary's shared broker, emptied
// for t: no topic is left but untouched ones of keep, no consumer group and
// no open transaction from an earlier test. t holds the broker until it
// ends; another test that asks for it meanwhile (a parallel one) waits. A
// second call from t returns the same broker as it is, so that a test can
// restart what it runs on the log it left.
//
// Tests that stop, kill, pause or restart the broker, or change a kept
// topic's configuration, use a broker of their own.
func Shared(t testing.TB, keep Keep) []string {
	t.Helper()
	c := sharedCluster(t)
	shared.mu.Lock()
	again := shared.holder == t
	shared.mu.Unlock()
	if again {
		return c.Addrs()
	}
	select {
	case shared.turn <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal("krafttest: the test ended while waiting for the shared broker")
	}
	shared.mu.Lock()
	shared.holder = t
	shared.mu.Unlock()
	t.Cleanup(func() {
		shared.mu.Lock()
		shared.holder = nil
		shared.mu.Unlock()
		<-shared.turn
	})
	empty(t, c, keep)
	return c.Addrs()
}

// Empty empties the shared broker again for t, which holds it (Shared),
// as Shared did when t took it, and returns its addresses: a test that
// runs one scenario twice gives each run a broker as new.
func Empty(t testing.TB, keep Keep) []string {
	t.Helper()
	shared.mu.Lock()
	holds := shared.holder == t
	shared.mu.Unlock()
	if !holds {
		t.Fatalf("krafttest: Empty by a test that does not hold the shared broker; call Shared first")
	}
	empty(t, shared.c, keep)
	return shared.c.Addrs()
}

// empty runs reset on c, failing t with the broker's log when it fails.
func empty(t testing.TB, c *kraft.Cluster, keep Keep) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), resetTimeout)
	defer cancel()
	if err := reset(ctx, c.Addrs(), keep); err != nil {
		t.Fatalf("krafttest: empty the shared broker: %v\n%s", err, c.Node(1).LogTail(40))
	}
}

// sharedCluster returns the binary's broker, starting it on first use.
func sharedCluster(t testing.TB) *kraft.Cluster {
	t.Helper()
	shared.once.Do(func() {
		shared.turn = make(chan struct{}, 1)
		shared.dir, shared.err = os.MkdirTemp("", "krafttest-shared-")
		if shared.err != nil {
			return
		}
		// Not the test's context: the broker outlives the test that starts it.
		shared.c, shared.err = kraft.Start(context.Background(), kraft.TestConfig(shared.dir))
		if shared.err != nil {
			_ = os.RemoveAll(shared.dir)
		}
	})
	if shared.err != nil {
		t.Fatalf("krafttest: shared broker: %v", shared.err)
	}
	return shared.c
}

// StopShared kills the binary's shared broker, if one was started, and
// removes its files. Call it from TestMain after the tests; without
// it the broker still dies with the test binary (a parent-death signal)
// but its directory is left behind.
func StopShared() {
	if shared.c == nil {
		return
	}
	for _, n := range shared.c.Nodes() {
		_ = n.Kill() // the data is thrown away; no need for an orderly stop
	}
	_ = os.RemoveAll(shared.dir)
}

// resetTimeout bounds one emptying of the shared broker.
const resetTimeout = 2 * time.Minute

// reset empties the broker at addrs for the next test: it ends the open
// transactions (their markers must land before the topics go, or a
// coordinator could write them into new topics of the same names),
// removes every consumer group with its members and offsets, and deletes
// every topic but the untouched ones of keep.
func reset(ctx context.Context, addrs []string, keep Keep) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ClientID("kafkatest-reset"))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	steps := []struct {
		name string
		run  func(context.Context, *kgo.Client, *kadm.Client) error
	}{
		{"end open transactions", endTransactions},
		{"delete consumer groups", deleteGroups},
		{"delete topics", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error { return deleteTopics(ctx, adm, keep) }},
	}
	for _, s := range steps {
		if err := s.run(ctx, cl, adm); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// endTransactions aborts every open transaction by taking its
// transactional id over (InitProducerId fences the old producer and aborts
// what it left open), then waits until no transaction is being completed.
func endTransactions(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
	for {
		open, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
		if err != nil {
			return err
		}
		if len(open) == 0 {
			return nil
		}
		for _, tx := range open {
			if tx.State != "Ongoing" {
				continue // completing already; wait for it
			}
			if err := takeOver(ctx, cl, tx.TxnID); err != nil {
				return fmt.Errorf("abort %s: %w", tx.TxnID, err)
			}
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("transactions still open %v: %w", open.TransactionalIDs(), err)
		}
	}
}

// takeOver asks for a producer id under txnID, which aborts the
// transaction it has open. The coordinator answers CONCURRENT_TRANSACTIONS
// until the abort is written; endTransactions waits for that.
func takeOver(ctx context.Context, cl *kgo.Client, txnID string) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = 60_000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil && !errors.Is(err, kerr.ConcurrentTransactions) {
		return err
	}
	return nil
}

// deleteGroups removes every member of every group (a killed process's
// member would otherwise hold a rebalance of the next test until its
// session times out), then the groups themselves.
func deleteGroups(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	if len(listed) == 0 {
		return nil
	}
	described, err := adm.DescribeGroups(ctx, listed.Groups()...)
	if err != nil {
		return err
	}
	for _, g := range described {
		if err := removeMembers(ctx, cl, g); err != nil {
			return fmt.Errorf("group %s: %w", g.Group, err)
		}
	}
	deleted, err := adm.DeleteGroups(ctx, listed.Groups()...)
	if err != nil {
		return err
	}
	for _, d := range deleted {
		if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("group %s: %w", d.Group, d.Err)
		}
	}
	return nil
}

// removeMembers makes every member of g leave it, as an administrator's
// removal of members does.
func removeMembers(ctx context.Context, cl *kgo.Client, g kadm.DescribedGroup) error {
	if len(g.Members) == 0 {
		return nil
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = g.Group
	for _, m := range g.Members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m.MemberID
		lm.InstanceID = m.InstanceID
		req.Members = append(req.Members, lm)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return err
	}
	return nil
}

// deleteTopics deletes every topic but the untouched ones of keep and
// waits until the broker no longer lists them.
func deleteTopics(ctx context.Context, adm *kadm.Client, keep Keep) error {
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	used, err := touched(ctx, adm, listed, keep)
	if err != nil {
		return err
	}
	if len(used) == 0 {
		return nil
	}
	deleted, err := adm.DeleteTopics(ctx, used...)
	if err != nil {
		return err
	}
	if err := deleted.Error(); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return err
	}
	for {
		listed, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), used...)
		if err != nil {
			return err
		}
		left := slices.DeleteFunc(listed.Names(), func(name string) bool { return errors.Is(listed[name].Err, kerr.UnknownTopicOrPartition) })
		if len(left) == 0 {
			return nil
		}
		if err := pause(ctx); err != nil {
			return fmt.Errorf("still listed %v: %w", left, err)
		}
	}
}

// touched returns the listed topics that are not as keep has them: not
// in it, with another partition count, or with an end offset above zero
// on some partition.
func touched(ctx context.Context, adm *kadm.Client, listed kadm.TopicDetails, keep Keep) ([]string, error) {
	fresh := map[string]bool{}
	var candidates []string
	for name, partitions := range keep {
		if d, ok := listed[name]; ok && len(d.Partitions) == int(partitions) {
			fresh[name] = true
			candidates = append(candidates, name)
		}
	}
	if len(candidates) > 0 {
		ends, err := adm.ListEndOffsets(ctx, candidates...)
		if err != nil {
			return nil, err
		}
		if err := ends.Error(); err != nil {
			return nil, err
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Offset > 0 {
				fresh[o.Topic] = false
			}
		})
	}
	var used []string
	for _, name := range listed.Names() {
		if !fresh[name] {
			used = append(used, name)
		}
	}
	return used, nil
}

// pause waits a moment between two looks at the broker.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(20 * time.Millisecond):
	}
	return nil
}
