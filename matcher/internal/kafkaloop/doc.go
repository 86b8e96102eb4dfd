// Package kafkaloop runs the engine as a consume-transform-produce loop over
// Kafka with franz-go's GroupTransactSession: a batch of orders records, the
// order events and fills it caused, and the consumer offsets after it are
// committed in one transaction or not at all (docs/architecture.md "Exactly
// once").
//
// Each partition of orders has its own engine. An engine is valid for a
// partition only while it has applied every record before the next one the
// group hands out; when that does not hold (first assignment, a partition
// that came back after another member moved it on, an aborted transaction
// that rewound the group) the loop brings the engine up to date by reading
// the partition itself, discarding the outputs, which the transactions of
// whoever processed those records already published.
//
// The rebuild starts from the partition's last snapshot round on
// matcher-snapshots, which the loop writes every Config.SnapshotEvery
// records in the transaction of the batch it reflects (snapshot.go), and
// reads only the orders records after the round; without a whole round it
// reads the partition from its start.
package kafkaloop
