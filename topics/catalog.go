package topics

import (
	"slices"
	"strconv"
	"sync"
	"time"
)

// CleanupPolicy is a topic's Kafka cleanup.policy.
type CleanupPolicy string

// Cleanup policies used by the catalog.
const (
	// Delete drops whole segments older than the retention.
	Delete CleanupPolicy = "delete"
	// Compact keeps the latest record of each key.
	Compact CleanupPolicy = "compact"
)

// Forever is the Retention of topics whose records are never dropped by age.
const Forever time.Duration = -1

// Partitioning says who chooses a record's partition.
type Partitioning int

const (
	// ByKeyHash leaves the choice to the client's default partitioner
	// (murmur2 of the key, as the Java client does), so every record of a
	// key lands on one partition while the partition count is unchanged.
	ByKeyHash Partitioning = iota + 1
	// BySlot makes the producer set the partition from the topic's
	// SlotLayout, never from the key hash, so that raising the partition
	// count does not move a live market (docs/architecture.md "One writer
	// per slot").
	BySlot
)

// String returns the name used in docs and tools.
func (p Partitioning) String() string {
	switch p {
	case ByKeyHash:
		return "key-hash"
	case BySlot:
		return "slot-layout"
	default:
		return "Partitioning(" + strconv.Itoa(int(p)) + ")"
	}
}

// Topic is one entry of the catalog: what a topic is for and how it is
// configured. Partitions is the count a new topic is created with; a running
// cluster may have raised it since (see SlotLayout).
type Topic struct {
	Name         string
	Partitions   int32
	Partitioning Partitioning
	// Layout names the SlotLayout that maps slots to partitions for a BySlot
	// topic. Topics written by the matcher share the layout of Orders, so
	// the output of an orders partition lands on the same partition number.
	Layout string
	// Key says what the record key holds.
	Key     string
	Cleanup CleanupPolicy
	// Retention is how long records are kept, or Forever.
	Retention time.Duration
	// Segment is how long the newest log segment stays open (segment.ms),
	// or 0 for the broker's default of a week. The cleaner never compacts
	// the open segment, so for a compacted topic it bounds how long
	// superseded records stay.
	Segment time.Duration
	// MinCleanableDirtyRatio is the share of a compacted log written since
	// its last cleaning at which the cleaner takes it again
	// (min.cleanable.dirty.ratio), or 0 for the broker's default of 0.5.
	MinCleanableDirtyRatio float64
	// Transactional topics are written inside Kafka transactions; consumers
	// must read them with isolation level read_committed.
	Transactional bool
	// Types are the message types the topic carries.
	Types []string
	// Purpose is one line for readers of the catalog.
	Purpose string
}

// Configs returns the topic-level Kafka configs the catalog prescribes.
func (t Topic) Configs() map[string]string {
	c := map[string]string{
		"cleanup.policy": string(t.Cleanup),
		"retention.ms":   retentionMillis(t.Retention),
	}
	if t.Segment > 0 {
		c["segment.ms"] = strconv.FormatInt(t.Segment.Milliseconds(), 10)
	}
	if t.MinCleanableDirtyRatio > 0 {
		c["min.cleanable.dirty.ratio"] = strconv.FormatFloat(t.MinCleanableDirtyRatio, 'f', -1, 64)
	}
	return c
}

func retentionMillis(d time.Duration) string {
	if d == Forever {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// Catalog returns every topic the system uses. It builds a new slice on each
// call so callers may keep or change it.
func Catalog() []Topic {
	topics := baseCatalog()
	types := MessageTypes()
	for i := range topics {
		for _, m := range types {
			if m.Topic == topics[i].Name {
				topics[i].Types = append(topics[i].Types, m.Name)
			}
		}
	}
	return topics
}

// Lookup returns the catalog entry of a topic name. Producers call it for
// every record they build, so it reads a table built once instead of
// building the catalog; the entry's Types is the caller's own copy.
func Lookup(name string) (Topic, bool) {
	t, ok := catalogByName()[name]
	t.Types = slices.Clone(t.Types)
	return t, ok
}

// catalogByName is the catalog by topic name. The catalog is constant, so
// the table is built once and never changed.
var catalogByName = sync.OnceValue(func() map[string]Topic {
	byName := make(map[string]Topic)
	for _, t := range Catalog() {
		byName[t.Name] = t
	}
	return byName
})

// LayoutFamily returns the topics that follow the named layout, the layout's
// own topic first. Their partition counts are raised together.
func LayoutFamily(layout string) []Topic {
	var family []Topic
	for _, t := range Catalog() {
		if t.Layout == layout {
			family = append(family, t)
		}
	}
	return family
}

const (
	day  = 24 * time.Hour
	week = 7 * day
)

// baseCatalog holds the topic settings. The partition counts are sized for
// the exchange's shape rather than its volume:
//   - slot topics get 16 partitions: at most 65 whole-block markets are live
//     (now to 64 slots ahead), so each partition carries about four, and up
//     to 16 matcher instances can share the load;
//   - per-user and per-hash topics get 8, enough for the settler and relay
//     to scale out while keeping a user's records in order;
//   - low-volume topics get 4, and the layout topic 1 so a reader sees all
//     layouts in one ordered log.
//
// Retention follows who needs history: commands and matcher output are kept
// a week for replays and audits (the ledger in Postgres is the lasting
// record), trades and funding a month for analytics, live feeds and orderflow
// a day because their readers only care about now. Snapshots and layouts are
// compacted and kept forever because the latest record per key is the state.
// The matcher rewrites every key of a snapshots partition in each round, so
// that topic rolls a segment every hour and is cleaned once a tenth of it is
// superseded: with the broker's defaults (a week, half) the open segment
// would keep a week of rounds.
func baseCatalog() []Topic {
	return []Topic{
		{Name: Orders, Partitions: 16, Partitioning: BySlot, Layout: Orders,
			Key: "slot (decimal string)", Cleanup: Delete, Retention: week,
			Purpose: "order commands and slot-clock ticks; one matcher owns each partition"},
		{Name: OrderEvents, Partitions: 16, Partitioning: BySlot, Layout: Orders,
			Key: "slot (decimal string)", Cleanup: Delete, Retention: week, Transactional: true,
			Purpose: "the matcher's decisions about orders, books and market status"},
		{Name: Fills, Partitions: 16, Partitioning: BySlot, Layout: Orders,
			Key: "slot (decimal string)", Cleanup: Delete, Retention: 30 * day, Transactional: true,
			Purpose: "trades between a taker and a maker order, settled by the settler"},
		{Name: MatcherSnapshots, Partitions: 16, Partitioning: BySlot, Layout: Orders,
			Key: "slot (decimal string) for the first part of a slot's snapshot, <slot>/<part> for the others; a null value deletes a part no longer written", Cleanup: Compact, Retention: Forever,
			Segment: time.Hour, MinCleanableDirtyRatio: 0.1, Transactional: true,
			Purpose: "latest market state per slot, so a matcher restarts without replaying a week"},
		{Name: LedgerCommands, Partitions: 8, Partitioning: ByKeyHash,
			Key: "userId (decimal string)", Cleanup: Delete, Retention: week,
			Purpose: "transfers between a user's own accounts and withdrawal debits, applied by the settler"},
		{Name: FundingEvents, Partitions: 4, Partitioning: ByKeyHash,
			Key: "the user's wallet address (lower-case 0x hex)", Cleanup: Delete, Retention: 30 * day,
			Purpose: "chain deposits observed by the chain watcher and the withdrawal lifecycle"},
		{Name: AccountEvents, Partitions: 8, Partitioning: ByKeyHash,
			Key: "userId (decimal string)", Cleanup: Delete, Retention: day,
			Purpose: "balance changes, posted account transactions and position changes for live account feeds"},
		{Name: Validators, Partitions: 4, Partitioning: ByKeyHash,
			Key: "validator BLS public key (lower-case 0x hex)", Cleanup: Delete, Retention: 30 * day,
			Purpose: "validator registrations and the proposer duties of registered validators"},
		{Name: OrderflowTxs, Partitions: 8, Partitioning: ByKeyHash,
			Key: "transaction hash (lower-case 0x hex)", Cleanup: Delete, Retention: day,
			Purpose: "decoded private originator transactions, fanned out to searchers"},
		{Name: OrderflowBundles, Partitions: 8, Partitioning: ByKeyHash,
			Key: "bundle hash (lower-case 0x hex); <account>/<replacementUuid> for a bundle of a replacement group (searcher, or originator on the partner endpoint)", Cleanup: Delete, Retention: day,
			Purpose: "originator and searcher bundles on their way to builders"},
		{Name: OrderflowLifecycle, Partitions: 8, Partitioning: ByKeyHash,
			Key: "transaction or bundle hash (lower-case 0x hex)", Cleanup: Delete, Retention: week,
			Purpose: "status changes of private transactions and bundles, for tracking reads"},
		{Name: OrderflowRefunds, Partitions: 4, Partitioning: ByKeyHash,
			Key: "hash of the originator transaction refunded (lower-case 0x hex)", Cleanup: Delete, Retention: 30 * day,
			Purpose: "refunds owed to originators for included backruns"},
		{Name: SlotLayouts, Partitions: 1, Partitioning: ByKeyHash,
			Key: "layout name (the owning topic's name)", Cleanup: Compact, Retention: Forever,
			Purpose: "the slot→partition layout of each slot-partitioned topic family"},
	}
}
