package kraft_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/platform/kafka/kraft"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A record the broker acknowledged survives the broker's SIGKILL: started
// again on the same ports and data, the node serves it to a new client at
// the same address.
func TestKilledNodeStartsAgainWithItsData(t *testing.T) {
	ctx := testContext(t)
	c, err := kraft.Start(ctx, kraft.TestConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	addr := c.Node(1).Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic("t"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	if c.Node(1).Running() {
		t.Fatal("node runs after Kill")
	}
	if err := c.Node(1).Start(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Node(1).Addr() != addr {
		t.Fatalf("restarted node listens on %s, was %s", c.Node(1).Addr(), addr)
	}

	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fs := rd.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if got := fs.Records(); len(got) != 1 || string(got[0].Value) != "kept" {
		t.Fatalf("after the crash the topic holds %v, want the one record \"kept\"", got)
	}
	if !strings.Contains(c.Node(1).LogTail(2000), "Kafka Server started") {
		t.Error("the node's log does not say the server started")
	}
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	libs := t.TempDir()
	if err := os.WriteFile(filepath.Join(libs, "kafka_2.13-"+kraft.Version+".jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cfg  kraft.Config
		want string
	}{
		"no dir":             {kraft.Config{Libs: libs}, "Dir is empty"},
		"too many nodes":     {kraft.Config{Dir: "d", Libs: libs, Nodes: 10}, "10 nodes"},
		"addresses mismatch": {kraft.Config{Dir: "d", Libs: libs, Nodes: 3, Addrs: []string{"127.0.0.1:1"}}, "1 addresses for 3 nodes"},
		"public host":        {kraft.Config{Dir: "d", Libs: libs, Addrs: []string{"0.0.0.0:9092"}}, "host must be 127.0.0.1"},
		"no port":            {kraft.Config{Dir: "d", Libs: libs, Addrs: []string{"127.0.0.1"}}, "missing port"},
		"no jars":            {kraft.Config{Dir: t.TempDir(), Libs: t.TempDir()}, "scripts/ensure-kafka.sh"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kraft.Start(t.Context(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// The Kafka version is pinned once in spirit and three times in files:
// the Go constant, the Maven project that resolves the jars, and the image
// of the production compose file. They must agree.
func TestVersionIsPinnedAlike(t *testing.T) {
	for file, pattern := range map[string]string{
		"../../../deploy/kafka/pom.xml": `<kafka.version>([^<]+)</kafka.version>`,
		"../../../docker-compose.yml":   `image: apache/kafka:(\S+)`,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(pattern).FindAllSubmatch(b, -1)
		if len(m) == 0 {
			t.Errorf("%s: no Kafka version matching %s", file, pattern)
		}
		for _, v := range m {
			if string(v[1]) != kraft.Version {
				t.Errorf("%s pins Kafka %s, kraft.Version is %s", file, v[1], kraft.Version)
			}
		}
	}
}

// A cluster id that begins with '-' (one in 64 of the random ones) is
// still passed to the storage tool as a value, not an option.
func TestFormatTakesAClusterIDThatLooksLikeAnOption(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster-id"), []byte("-_AAAAAAAAAAAAAAAAAAAA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := kraft.Start(testContext(t), kraft.TestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Node(1).Kill()
	meta, err := os.ReadFile(filepath.Join(dir, "node-1", "data", "meta.properties"))
	if err != nil || !strings.Contains(string(meta), "cluster.id=-_AAAAAAAAAAAAAAAAAAAA") {
		t.Fatalf("meta.properties: %s %v", meta, err)
	}
}
