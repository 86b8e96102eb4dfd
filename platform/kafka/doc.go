// Package kafka is the adapter between the exchange and Kafka, built on
// franz-go. It builds clients with the exchange's defaults, creates and
// configures the catalog's topics, maintains the slot→partition layout, and
// turns topics.Envelope values into records and back. The in-process broker
// of the one-machine stack is package kfakebroker; Apache Kafka for tests is
// kraft and kafkatest.
//
// The contract itself (topic names, layouts, the envelope) lives in the
// topics module; this package only knows how to put it on a broker.
package kafka
