package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"blockspace.exchange/topics"
)

// Config is what a service needs to reach Kafka.
type Config struct {
	// Brokers are the seed brokers as host:port, e.g. from KAFKA_BROKERS.
	Brokers []string
	// ClientID names the client in broker logs and quotas. Default
	// "blockspace".
	ClientID string
	// Linger is how long a partition's batch waits for more records.
	// Default 2ms: ingress answers callers only after Kafka acknowledged
	// the command, so linger is added to request latency; 2ms still batches
	// under load.
	Linger time.Duration
	// Compression is the codec of produced batches (KAFKA_COMPRESSION):
	// snappy (the default), lz4, zstd, gzip or none. Consumers need the
	// codec; docs/topics.md "Compression" says which clients have which.
	Compression string
}

// Default client settings.
const (
	DefaultClientID    = "blockspace"
	DefaultLinger      = 2 * time.Millisecond
	DefaultCompression = "snappy"
)

// codec returns the producer codec of a KAFKA_COMPRESSION name.
func codec(name string) (kgo.CompressionCodec, bool) {
	switch name {
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "none":
		return kgo.NoCompression(), true
	}
	return kgo.CompressionCodec{}, false
}

// CompressionOpt is the producer option of a KAFKA_COMPRESSION name (""
// is the default), for clients built without NewClient, such as a
// transactional session; a name CheckCompression refuses is the default.
func CompressionOpt(name string) kgo.Opt {
	c, ok := codec(name)
	if !ok {
		c, _ = codec(DefaultCompression)
	}
	return kgo.ProducerBatchCompression(c)
}

// CheckCompression reports a codec name KAFKA_COMPRESSION cannot take;
// empty is the default.
func CheckCompression(name string) error {
	if _, ok := codec(name); !ok && name != "" {
		return fmt.Errorf("kafka compression %q: want snappy, lz4, zstd, gzip or none", name)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("kafka config: no brokers; set KAFKA_BROKERS to host:port[,host:port]")
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("kafka config: broker %q is not host:port: %w", b, err)
		}
	}
	if c.Linger < 0 {
		return fmt.Errorf("kafka config: linger %s is negative", c.Linger)
	}
	if err := CheckCompression(c.Compression); err != nil {
		return fmt.Errorf("kafka config: %w", err)
	}
	return nil
}

// NewClient returns a franz-go client with the exchange's defaults:
//   - records of slot-partitioned topics go to the partition the producer
//     set (from the topic's SlotLayout), all others are hashed by key like
//     the Java client does;
//   - consumers read committed records only, because the matcher writes its
//     topics in transactions and aborted records must never be settled;
//   - topics are never auto-created: a misspelt topic fails loudly.
//
// opts are applied last and override the defaults (a consumer group, a
// transactional id, ...).
func NewClient(cfg Config, opts ...kgo.Opt) (*kgo.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	base := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.ProducerLinger(cfg.Linger),
		CompressionOpt(cfg.Compression),
		kgo.RecordPartitioner(Partitioner()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new kafka client: %w", err)
	}
	return cl, nil
}

// Ping checks that a broker answers, for readiness probes.
func Ping(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("ping kafka: %w", err)
	}
	return nil
}

// Partitioner returns the partitioner of the catalog: manual for
// slot-partitioned topics (the record's Partition field, set from the
// SlotLayout, decides), Kafka-compatible key hashing for every other topic.
func Partitioner() kgo.Partitioner {
	return catalogPartitioner{
		manual: kgo.ManualPartitioner(),
		hashed: kgo.StickyKeyPartitioner(nil),
	}
}

type catalogPartitioner struct {
	manual, hashed kgo.Partitioner
}

func (p catalogPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if t, ok := topics.Lookup(topic); ok && t.Partitioning == topics.BySlot {
		return p.manual.ForTopic(topic)
	}
	return p.hashed.ForTopic(topic)
}
