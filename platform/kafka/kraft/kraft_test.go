package kraft_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
// the same address. So it does when the whole cluster is started again on
// its directory, as `make run-kafka` resumes, without formatting it anew.
func TestKilledNodeStartsAgainWithItsData(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	c, err := kraft.Start(ctx, kraft.TestConfig(dir))
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
	metaPath := filepath.Join(dir, "node-1", "data", "meta.properties")
	meta := readMeta(t, metaPath)

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
	expectKept(ctx, t, addr)
	if !strings.Contains(c.Node(1).LogTail(2000), "Kafka Server started") {
		t.Error("the node's log does not say the server started")
	}

	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	c, err = kraft.Start(ctx, kraft.TestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if again := readMeta(t, metaPath); !maps.Equal(again, meta) {
		t.Fatalf("the cluster started again formatted its node anew: meta.properties %v, was %v", again, meta)
	}
	expectKept(ctx, t, c.Node(1).Addr())
}

// expectKept fails t unless topic t at addr holds the one record "kept".
func expectKept(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
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

// The nodes of a cluster, their log directories copied from one template,
// form one quorum: they share the cluster's id (here one the storage tool
// would take for an option) and each has its own node and directory id.
func TestNodesOfAClusterShareItsIDAndHaveTheirOwnDirectories(t *testing.T) {
	dir := t.TempDir()
	const id = "-_AAAAAAAAAAAAAAAAAAAA"
	if err := os.WriteFile(filepath.Join(dir, "cluster-id"), []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := kraft.TestConfig(dir)
	cfg.Nodes = 3
	ctx := testContext(t)
	c, err := kraft.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Killed, not closed: the last node of a cluster stopped in order
	// waits for a quorum that is gone.
	t.Cleanup(func() {
		for _, n := range c.Nodes() {
			_ = n.Kill()
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Brokers) != 3 || m.Cluster != id {
		t.Fatalf("metadata: cluster %q with brokers %v, want %q with 3", m.Cluster, m.Brokers, id)
	}
	dirIDs := map[string]int{}
	for _, n := range c.Nodes() {
		meta := readMeta(t, filepath.Join(dir, fmt.Sprintf("node-%d", n.ID()), "data", "meta.properties"))
		if meta["cluster.id"] != id || meta["node.id"] != strconv.Itoa(n.ID()) {
			t.Errorf("node %d: meta.properties %v", n.ID(), meta)
		}
		if other, ok := dirIDs[meta["directory.id"]]; ok || meta["directory.id"] == "" {
			t.Errorf("node %d has the directory id %q of node %d", n.ID(), meta["directory.id"], other)
		}
		dirIDs[meta["directory.id"]] = n.ID()
	}
}

func readMeta(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			meta[k] = v
		}
	}
	return meta
}

// recordingJava writes a java launcher that appends each command line to a
// file before running java, and returns the launcher and a function that
// reads the command lines so far.
func recordingJava(t *testing.T) (string, func() []string) {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "launches")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> '%s'\nexec '%s' \"$@\"\n", record, java)
	launcher := filepath.Join(dir, "java")
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return launcher, func() []string {
		b, err := os.ReadFile(record)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// count returns how many of the command lines run main.
func count(lines []string, main string) int {
	n := 0
	for _, l := range lines {
		if slices.Contains(strings.Fields(l), main) {
			n++
		}
	}
	return n
}

// The first cluster on a machine formats the storage template and, with no
// class archive yet, launches its broker without one. Once TrainArchive
// made the archive, a second cluster's node runs no storage tool and its
// JVM maps the archive.
func TestSecondClusterStartsFromTheTemplateAndArchive(t *testing.T) {
	java, launches := recordingJava(t)
	cache := t.TempDir()
	ctx := testContext(t)
	start := func() *kraft.Cluster {
		cfg := kraft.TestConfig(t.TempDir())
		cfg.Java, cfg.Cache = java, cache
		c, err := kraft.Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Node(1).Kill()
		if got := count(launches(), "kafka.tools.StorageTool"); got != 1 {
			t.Fatalf("the storage tool ran %d times, want once:\n%s", got, strings.Join(launches(), "\n"))
		}
		return c
	}
	lastLaunch := func() string { l := launches(); return l[len(l)-1] }

	start()
	if l := lastLaunch(); !strings.Contains(l, "kafka.Kafka") || strings.Contains(l, "SharedArchiveFile") {
		t.Fatalf("with no archive trained, the broker was launched as\n%s", l)
	}
	cfg := kraft.TestConfig(t.TempDir())
	cfg.Java, cfg.Cache = java, cache
	archive, err := kraft.TrainArchive(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(archive); err != nil || filepath.Dir(archive) != cache {
		t.Fatalf("class archive %s: %v; want it in %s", archive, err, cache)
	}
	c := start()
	if l := lastLaunch(); !strings.Contains(l, "kafka.Kafka") || !strings.Contains(l, "-XX:SharedArchiveFile="+archive) {
		t.Fatalf("the second cluster's broker was launched without the archive:\n%s", l)
	}
	if log := c.Node(1).LogTail(5000); strings.Contains(log, "shared archive") {
		t.Fatalf("the JVM did not map the archive:\n%s", log)
	}
	launched := len(launches())
	if again, err := kraft.TrainArchive(ctx, cfg); err != nil || again != archive || len(launches()) != launched {
		t.Fatalf("TrainArchive once there is an archive: %s %v, %d JVMs launched", again, err, len(launches())-launched)
	}
}
