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
// The continuous mode (the default) processes each record as it arrives and
// ends an epoch every EpochInterval (100 ms): outputs are flushed, then the
// offsets of everything processed are committed. Under the at-least-once
// guarantee (the default) outputs are visible at once; a crash may repeat
// the outputs of the records processed since the last epoch, and never loses
// one. See package continuous for the details.
//
// The micro-batch mode and the exactly-once guarantee are being built; New
// returns ErrNotImplemented when they are asked for.
//
// # Bad records
//
// A record that cannot be deserialized, or that a processor fails on, is
// handled by the bad-record policy: Fail (the default) stops Run with an
// error naming its topic, partition and offset; Skip logs and counts it;
// DeadLetter writes it, unchanged, to "<topic>-dlq" with headers that name
// the error and its position.
package weir
