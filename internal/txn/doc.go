// Package txn is the transactional producer session behind package
// exactlyonce and the runtime's exactly-once output: sarama's transactional
// AsyncProducer with every record awaited before a commit, offsets
// committed even without records, a context on every blocking call, errors
// classified by Kafka error code into what the caller must do, and a new
// producer epoch after any connection failure.
//
// It speaks internal/kafka's types (Config, Record, GroupMetadata) so that
// the runtime uses it without a conversion per record; package exactlyonce
// wraps it with public types and documents the protocol.
package txn
