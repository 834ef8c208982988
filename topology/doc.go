// Package topology is weir's typed DSL for describing stream processing:
// streams, tables, grouping, windowed aggregations, joins and custom
// processors, compiled into a validated Topology.
//
// Word count, the "hello world" of stream processing:
//
//	b := topology.NewBuilder()
//	lines := topology.NewStream(b, "text", serde.String(), serde.String())
//	words := topology.FlatMapValues(lines, strings.Fields)
//	counts := topology.GroupBy(words, func(_, w string) string { return w }).
//		Count(topology.Materialized("counts"))
//	counts.ToStream().To("word-counts")
//	topo, err := b.Build()
//
// Operations that keep the record types are methods (Filter, Peek, Merge,
// To, GroupByKey, Count, ...); operations that change them are functions,
// since Go methods cannot take type parameters (Map, MapValues, FlatMap,
// SelectKey, GroupBy, Aggregate, Join, Process, ...).
//
// A source keeps each record's timestamp, or takes one from the record with
// WithTimestamp (Kafka Streams' timestamp extractors). DSL functions see
// record headers through MapValuesWithHeaders and FilterWithHeaders.
//
// Serdes travel with streams: a source's serdes are kept until an operation
// changes the type; string, []byte, int64 and float64 get weir's serdes
// automatically; other types take WithKeySerde / WithValueSerde. Build
// reports every operation that needs a serde and has none — together with
// duplicate names, unknown stores, misused builders and bad window
// definitions — in one error. Nothing in this package panics on a mistake.
//
// Build groups nodes into sub-topologies: nodes linked directly or through a
// shared store run together in one task per partition; repartition topics
// (written when a stream whose keys changed is grouped or joined, and by
// the foreign-key joins JoinTablesOnForeignKey and LeftJoinTablesOnForeignKey)
// separate them. Describe prints the result like Kafka Streams' TopologyDescription.
//
// The topology is pure: it imports no Kafka client, no storage engine and no
// network package, and never reads the clock. Engines (weir.New) and the test
// driver (topologytest) run it.
package topology
