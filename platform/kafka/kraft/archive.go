package kraft

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A broker's JVM spends most of its start loading, parsing and verifying
// the classes of Kafka and its libraries. A class-data sharing archive
// holds them ready to be mapped: on JDK 17 a dynamic archive, which a JVM
// run with -XX:ArchiveClassesAtExit writes when it exits and later JVMs map
// with -XX:SharedArchiveFile. It takes about 40% off the CPU a test broker
// needs to start (docs/operations.md has the figures). TrainArchive makes
// one: it starts a broker that writes its classes at exit, has it serve a
// transaction and a consumer group (so that their classes are archived
// too), and stops it. scripts/ensure-kafka.sh runs it, before any test, so
// that no test's broker start waits for a training.
//
// An archive fits one build of the JVM and one class path. A JVM given one
// that does not fit warns and runs without it, but one given a path that
// does not exist runs without any class sharing, and one given a truncated
// archive crashes. So the archive's name is a hash of the JVM's files and of
// the jars, a JVM is given it only when it exists, and it is renamed into
// place only once a JVM has mapped it with -Xshare:on.

// trainStopTimeout bounds the training broker's stop, in which the JVM
// writes the archive: on two busy cores that has taken 15 s.
const trainStopTimeout = 2 * time.Minute

// classPath lists the jars of libs, sorted, from the directory's real path,
// so that every checkout sharing one cache of jars has the same class path
// and can use the same archive.
func classPath(libs string) (string, error) {
	real, err := filepath.EvalSymlinks(libs)
	if err != nil {
		return "", fmt.Errorf("kraft: class path: %w", err)
	}
	jars, err := filepath.Glob(filepath.Join(real, "*.jar"))
	if err != nil {
		return "", fmt.Errorf("kraft: class path: %w", err)
	}
	return strings.Join(jars, string(filepath.ListSeparator)), nil
}

// archivePath is where the class archive of c's JVM and jars lives: a
// name that changes with the JVM's files and with each jar's size and
// modification time, as the JVM's own check of an archive does.
func archivePath(c Config) string {
	h := sha256.New()
	files := append(jvmFiles(c.Java), filepath.SplitList(c.classPath)...)
	for _, f := range files {
		fmt.Fprint(h, f)
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(h, " %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
		fmt.Fprintln(h)
	}
	return filepath.Join(c.Cache, "classes-"+hex.EncodeToString(h.Sum(nil))[:16]+".jsa")
}

// jvmFiles are the files that make the JVM java runs: the launcher, the
// JVM library and the JDK's base archive, which a dynamic archive extends.
func jvmFiles(java string) []string {
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return []string{java}
	}
	server := filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "server")
	return []string{real, filepath.Join(server, "libjvm.so"), filepath.Join(server, "classes.jsa")}
}

// withArchive returns c set to map its class archive if it has one.
func (c Config) withArchive() Config {
	if path := archivePath(c); exists(path) {
		c.archive = path
	}
	return c
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TrainArchive returns the class archive of cfg's JVM and jars, in
// cfg.Cache, training it first on a node in cfg.Dir if there is none. A
// process that finds another training the same archive waits for it.
// Clusters started afterwards map the archive; without one they start as
// well, only slower.
func TrainArchive(ctx context.Context, cfg Config) (string, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return "", err
	}
	path := archivePath(cfg)
	if exists(path) {
		return path, nil
	}
	if err := os.MkdirAll(cfg.Cache, 0o755); err != nil {
		return "", fmt.Errorf("kraft: class archive: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("kraft: class archive: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("kraft: class archive: lock: %w", err)
	}
	if exists(path) {
		return path, nil // another process trained it while we waited
	}
	if err := train(ctx, cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// train runs a single-node cluster of c's settings whose JVM writes its
// classes at exit, and puts the archive at path once a JVM has mapped it.
func train(ctx context.Context, c Config, path string) error {
	c.Nodes, c.Addrs = 1, nil
	c.archiveOut = path + ".tmp"
	defer os.Remove(c.archiveOut)
	cl, err := Start(ctx, c)
	if err != nil {
		return fmt.Errorf("kraft: class archive: train: %w", err)
	}
	werr := exercise(ctx, cl.Addrs())
	if err := cl.Node(1).Stop(trainStopTimeout); err != nil {
		return fmt.Errorf("kraft: class archive: train: %w", err)
	}
	if werr != nil {
		return fmt.Errorf("kraft: class archive: train: %w", werr)
	}
	out, err := exec.CommandContext(ctx, c.Java, "-Xshare:on", "-XX:SharedArchiveFile="+c.archiveOut,
		"-cp", c.classPath, "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kraft: class archive: a JVM cannot map it: %w\n%s", err, out)
	}
	if err := os.Rename(c.archiveOut, path); err != nil {
		return fmt.Errorf("kraft: class archive: %w", err)
	}
	return nil
}

// exercise has the broker at addrs serve what the tests use most: a
// compacted topic, a committed transaction and a consumer group that reads
// it and commits its offsets.
func exercise(ctx context.Context, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	const topic = "kraft-training"
	pr, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return fmt.Errorf("exercise: %w", err)
	}
	defer pr.Close()
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	if _, err := kadm.NewClient(pr).CreateTopic(ctx, 2, 1, compact, topic); err != nil {
		return fmt.Errorf("exercise: create topic: %w", err)
	}
	const records = 10
	if err := pr.BeginTransaction(); err != nil {
		return fmt.Errorf("exercise: begin transaction: %w", err)
	}
	for i := range records {
		pr.Produce(ctx, &kgo.Record{Key: []byte{byte(i)}, Value: []byte("v")}, nil)
	}
	if err := pr.Flush(ctx); err != nil {
		return fmt.Errorf("exercise: produce: %w", err)
	}
	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("exercise: commit transaction: %w", err)
	}
	return consume(ctx, addrs, topic, records)
}

// consume reads n records of topic in a consumer group and commits them.
func consume(ctx context.Context, addrs []string, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("exercise: %w", err)
	}
	defer cl.Close()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("exercise: consume: %w", err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("exercise: commit offsets: %w", err)
	}
	return nil
}
