// Package txn is the transactional producer session behind package
// exactlyonce and the runtime's exactly-once output: every record awaited
// before a commit, offsets committed even without records, a context on
// every blocking call, errors classified by Kafka error code into what the
// caller must do, and a new producer epoch whenever a request of a
// transaction may still be on the wire.
//
// A [Session] runs on either client library, picked by
// kafka.ResolveClient(Config.Kafka.Client) (kafka.ClientEnv when unset),
// with the same API and the same error kinds:
//
//   - sarama (sarama.go, producer.go): sarama's transactional
//     AsyncProducer. A commit is strictly serial: records flushed, then
//     AddOffsetsToTxn, TxnOffsetCommit, EndTxn. No transactions v2; the
//     session re-initializes the producer after a connection failure.
//   - franz-go (franz.go, franzproducer.go): a kgo.Client with the
//     transactional id. The offsets go into the transaction while the
//     records are still in flight (TxnOffsetCommit with the member's group
//     metadata, KIP-447, sent by weir: franz-go offers it only to its own
//     consumer groups), EndTxn once both are done. On a cluster with
//     transactions v2 (KIP-890 part 2, Kafka 4.0+) no AddPartitionsToTxn or
//     AddOffsetsToTxn round trip is made and every EndTxn bumps the epoch,
//     which fences a delayed copy of a request without a re-initialization.
//
// Both run on one state machine (core.go: the states, the locking, the
// producer's initialization, Begin, Send's checks, the abort and Close);
// each library adds how records reach its client and how Commit ends a
// transaction.
//
// It speaks internal/kafka's types (Config, Record, GroupMetadata) so that
// the runtime uses it without a conversion per record; package exactlyonce
// wraps it with public types and documents the protocol.
package txn
