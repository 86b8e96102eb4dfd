package kafka

import (
	"context"
	"os/exec"
	"testing"
	"time"

	pkafka "blockspace.exchange/platform/kafka"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/proctest"
	"blockspace.exchange/topics"
	"github.com/twmb/franz-go/pkg/kgo"
)

// matcherProcess starts the matcher binary as instance id against the
// broker.
func matcherProcess(t *testing.T, bin string, brokers []string, id string) *exec.Cmd {
	t.Helper()
	return proctest.Start(t, bin, "KAFKA_BROKERS="+brokers[0], "ADMIN_ADDR=127.0.0.1:0", "ENVIRONMENT=dev",
		"MATCHER_INSTANCE_ID="+id, "MATCHER_STATIC_MEMBER=true", "MATCHER_MAX_BATCH=50", "MATCHER_SNAPSHOT_EVERY=400", "LOG_LEVEL=warn")
}

// TestMatcherProcessKilledUnderLoad runs the matcher binary while commands
// are still being produced, kills it with SIGKILL once it has committed
// part of its output (an open transaction, no group leave, nothing
// flushed), starts it again with the same instance id (a static group
// member, so it takes its partitions back at once), and checks that
// order events and fills are exactly those of an uninterrupted run, byte
// for byte: no gap, no duplicate.
func TestMatcherProcessKilledUnderLoad(t *testing.T) {
	ctx := testContext(t)
	bin := proctest.Build(t, "../../cmd/matcher")
	cfg := startBroker(t, ctx)
	envs := commandStream(t, []uint64{100, 101, 117, 130}, 400)
	want := expectedOutputs(t, envs)
	half := len(envs) / 4
	produceCommands(t, ctx, cfg, envs[:half])

	first := matcherProcess(t, bin, cfg.Brokers, "kill-test")
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		// The rest arrives while the matcher works, in small batches.
		for start := half; start < len(envs); start += 200 {
			produceCommands(t, ctx, cfg, envs[start:min(start+200, len(envs))])
		}
	}()
	adm, err := pkafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for deadline := time.Now().Add(60 * time.Second); committedInputs(ctx, adm) < 500; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first matcher committed fewer than 500 commands")
		}
	}
	proctest.Kill(t, first)
	<-produced

	if n := committedInputs(ctx, adm); n >= int64(len(envs)) {
		t.Fatalf("the kill came after every command was committed (%d); make the stream longer", n)
	}

	matcherProcess(t, bin, cfg.Brokers, "kill-test")
	assertSameOutputs(t, readOutputs(t, ctx, cfg), want)
}

// committedInputs is how many orders records the matcher group has
// committed, in the transactions that published their outputs; 0 while
// the group cannot be asked.
func committedInputs(ctx context.Context, cl *kgo.Client) int64 {
	n, _ := kafkatest.Committed(ctx, cl, DefaultGroup, topics.Orders)
	return n
}
