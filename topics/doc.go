// Package topics is the contract of the exchange's Kafka log: the catalog of
// every topic (name, partitions, key, cleanup policy, retention, message
// types), the explicit slot→partition layout of the slot-partitioned topics,
// and the versioned JSON envelope every record value carries.
//
// Like franz-go's kmsg, the package imports nothing beyond the standard
// library, so every service, tool and analytics job can depend on it without
// pulling a Kafka client or a database driver. Changes are additive: new
// topics, new message types and new payload fields keep old readers working;
// a breaking payload change gets a new version number, never a reused one.
//
// docs/topics.md describes the same contract for readers outside Go.
package topics
