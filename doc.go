// Package weir runs Kafka Streams–style topologies inside Go services.
//
// Describe the processing with package topology, then run it with an App.
// Every instance of the service that runs the same application id joins
// one Kafka consumer group; the partitions of the input topics are shared
// among them, and move when instances come and go. State lives in stores
// backed by changelog topics, so it moves with its partition.
//
//	b := topology.NewBuilder()
//	lines := topology.NewStream(b, "text", serde.String(), serde.String())
//	words := topology.FlatMapValues(lines, strings.Fields)
//	topology.GroupBy(words, func(_, w string) string { return w }).
//		Count(topology.Materialized("counts")).
//		ToStream().To("word-counts")
//	topo, err := b.Build()
//
//	app, err := weir.New(topo,
//		weir.WithBrokers("localhost:9092"),
//		weir.WithApplicationID("wordcount"))
//	err = app.Run(ctx) // until ctx is done
//
// # Execution modes and guarantees
//
// WithMode / WithMicroBatch choose how records are processed;
// WithGuarantee what survives a failure:
//
//	mode         guarantee      duplicates after a crash      a read_committed reader sees output
//	continuous   at-least-once  possible (since last epoch)   at once (ms)
//	continuous   exactly-once   none                          at the epoch's commit (≈ EpochInterval + commit)
//	micro-batch  at-least-once  possible (the failed batch)   at once
//	micro-batch  exactly-once   none                          at the batch's commit (≈ batch duration)
//
// The continuous mode (the default) processes each record as it arrives and
// ends an epoch every EpochInterval (100 ms). The micro-batch mode cuts the
// input into batches of planned offset ranges, written to a write-ahead log
// before each batch runs (package microbatch). Under at-least-once an epoch
// or batch flushes its outputs, then commits the offsets. Under exactly-once
// each epoch or batch is one Kafka transaction holding its outputs,
// changelog and dead-letter records and the consumer offsets (with the
// group metadata of the live member, KIP-447); a failed transaction is
// aborted and every task rewinds to the committed offsets, with its state
// restored from the committed changelog. Readers must use read_committed
// isolation to get the exactly-once view. Input topics need no transactions.
//
// # Bad records
//
// A record that cannot be deserialized, or that a processor fails on, is
// handled by the bad-record policy: Fail (the default) stops Run with an
// error naming its topic, partition and offset; Skip logs and counts it;
// DeadLetter writes it, unchanged, to "<topic>-dlq" with headers that name
// the error and its position.
//
// # License
//
// weir is licensed under the Apache License 2.0 (Apache-2.0); see the
// LICENSE file.
package weir
