package kafkaloop

import (
	"errors"
	"log/slog"
	"runtime"
	"time"

	"blockspace.exchange/platform/kafka"
)

// Config configures the loop.
type Config struct {
	// Kafka is how to reach the brokers.
	Kafka kafka.Config
	// Group is the consumer group of all matcher instances. Default
	// "matcher".
	Group string
	// TransactionalID must be stable for one instance across restarts and
	// differ between instances: a restarted instance with the same id
	// fences its previous incarnation and aborts the transaction it left
	// open. Required.
	TransactionalID string
	// StaticMember joins the group with TransactionalID as its
	// group.instance.id: a restarted instance takes its partitions back
	// at once instead of waiting for the session timeout of its previous
	// incarnation, but an instance that stops for good (scaled down)
	// holds its partitions until that timeout (45 s), as it does not
	// leave the group on close.
	StaticMember bool
	// MaxPollRecords bounds one transaction. Default 10,000.
	MaxPollRecords int
	// SnapshotEvery is how many input records of a partition go between
	// two snapshot rounds of it; a rebuild then reads at most about that
	// many records. Default 50,000; negative turns snapshots off.
	SnapshotEvery int
	// MetadataMaxAge is how often the client refreshes metadata, and so
	// how soon the group sees partitions added to orders (new markets
	// start on them about 19 minutes after a raise). Default 1 minute.
	MetadataMaxAge time.Duration
	// Workers is how many partitions of a batch are processed at once.
	// Default GOMAXPROCS.
	Workers int
	// Logger receives the loop's warnings. Default slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultGroup          = "matcher"
	DefaultMaxPollRecords = 10_000
	DefaultSnapshotEvery  = 50_000
	DefaultMetadataMaxAge = time.Minute
)

func (c Config) withDefaults() Config {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.MetadataMaxAge == 0 {
		c.MetadataMaxAge = DefaultMetadataMaxAge
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if err := c.Kafka.Validate(); err != nil {
		return err
	}
	if c.TransactionalID == "" {
		return errors.New("matcher kafka config: missing transactional id; set one stable id per instance")
	}
	if c.Workers < 0 {
		return errors.New("matcher kafka config: Workers is negative")
	}
	if c.MaxPollRecords < 0 {
		return errors.New("matcher kafka config: MaxPollRecords is negative")
	}
	return nil
}
