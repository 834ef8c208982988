// Package conformance checks weir's DSL operators against Kafka Streams
// 4.4 itself: the same input scripts run through weir's topologytest and
// through Kafka Streams' TopologyTestDriver (record cache off, so every
// update is forwarded) must give the same output records — topic, key,
// value, timestamp, and after which input.
//
// A script is a JSON file under scripts/<op>/<name>.json:
//
//	{
//	  "op": "tumbling", "size": 10, "grace": 5,
//	  "about": "what the script pins",
//	  "inputs": [{"topic": "in", "key": "a", "value": "x", "ts": 1001}, ...],
//	  "expect": [{"after": 0, "topic": "out", "key": "a@1000/1010", "value": "1", "ts": 1001}, ...]
//	}
//
// Keys and values are strings (null is a null key or a tombstone); times
// are milliseconds. "headers", optional on inputs and outputs, lists a
// record's headers in order as [key, value] pairs (values as text).
// "restart": true on an input restarts the application before that input:
// it stops and starts again with its stores restored — Kafka Streams
// reopens its state directory (in-memory stores restored from their
// changelogs), topologytest restores every logged store from its
// changelog (Driver.Restart), the engine test stops the application and
// starts a new one. What processors keep only in memory (their stream
// time) starts again. The operators and their parameters:
//
//	aggregate          GroupByKey (or GroupBy, "rekey") + Count or Reduce ("agg": "count" | "reduce")
//	tumbling, hopping  WindowedBy(TumblingWindows / HoppingWindows), "size", "advance", "grace", "agg", "final"
//	sliding            WindowedBy(SlidingWindows), "size" (the time difference), "grace", "agg", "final"
//	session            SessionWindowedBy, "gap", "grace", "agg"
//	cogroup            Cogroup of "left" ("L:v;") and "right" ("R:v;") into one string per key; windowed
//	                   by "size" ("advance"; "window": "sliding") or "gap", "grace"; "rekey" re-keys "left"
//	suppress           Table "in" (or, with "size", a tumbling count; with "gap", a session count) Suppress'ed
//	                   UntilTimeLimit("limit") in a buffer of "maxRecords" / "maxBytes" that emits early;
//	                   "final": "suppress" is UntilWindowCloses
//	stream-table       Join of stream "left" with table "right" ("rekey": re-key the stream first)
//	stream-table-left  LeftJoin of the same
//	table-table        JoinTables of tables "left" and "right"
//	table-table-left   LeftJoinTables of the same; table-table-outer: OuterJoinTables
//	global-join        JoinGlobal of stream "left" with global table "right" by the value's first character
//	global-join-left   LeftJoinGlobal of the same (an empty value maps to no key: Kafka Streams' null)
//	stream-stream      JoinStreams of streams "left" and "right", "before", "after", "grace"
//	stream-stream-left LeftJoinStreams of the same; stream-stream-outer: OuterJoinStreams
//	fk-join            JoinTablesOnForeignKey of table "left" (value "x:payload" names foreign key "x") with table "right"
//	fk-join-left       LeftJoinTablesOnForeignKey of the same ("materialize": the result has a store; "history": both tables versioned)
//	to-table           ToTable of "in" ("materialize": in a store; "rekey": re-key first)
//	table-filter       NewTable + Filter (drops the value "filter"), table-mapvalues: + MapTableValues
//	table-groupby      GroupTable of table "in" by the value's first character ("-": null key, "_": null value;
//	                   "filter": a table Filter first) + Count, Reduce or AggregateTable ("agg");
//	                   with "gap" (and "grace"), of the session count of stream "in" by the key's first character
//	versioned-table    NewTable(Versioned("history")) of "in" (+ Filter dropping "filter") + ToStream
//	stream-table-versioned  Join of stream "left" with versioned table "right" ("history"; "left": LeftJoin; "rekey")
//	stream-table-grace      the same with WithGrace("grace")
//	table-table-versioned   JoinTables of versioned tables "left" and "right" ("history")
//	table-table-versioned-left   LeftJoinTables of the same
//	table-table-versioned-outer  OuterJoinTables of the same
//	stateless          FlatMapValues (split on ",") + MapValues (upper case); merge: Merge of "left" and "right"
//	headers            FilterWithHeaders (drops records with a header named "filter") + MapValuesWithHeaders (appends
//	                   the last "trace" header to the value, sets header "seen" to the old value), then To or "agg": "count"
//	timestamp-extractor NewStream with WithTimestamp reading the value's time ("payload@ms"; none: the
//	                   partition time; negative: dropped), then To, or with a "size" a tumbling Count ("grace", "rekey")
//	port-orders        examples/orders, a whole Kafka Streams application ported (OrdersPort.java):
//	                   tables "customers" and "orders" in, three output topics
//
// "filter": v drops the input records whose value is v before the operator;
// "rekey": true re-keys by the value's first character (a repartition);
// "final": "suppress" is EmitFinal against Kafka Streams'
// suppress(untilWindowCloses), "onclose" against emitStrategy(onWindowClose).
// Windowed keys print as key@start/end. The output topic is "out", or the
// topics the script lists in "outputs" (e.g. "outputs": ["orders-by-region",
// "revenue-by-region"]): after each input both sides read each listed topic
// in the listed order, so an input's outputs appear topic by topic.
//
// "expect" is Kafka Streams' output, recorded by `weir-conformance -record`
// from the oracle (kstreams/, a small Java program). go test checks weir
// against it without Java (TestScripts); cmd/weir-conformance runs the
// oracle again and checks both (CI). A script that pins a documented
// difference (docs/semantics.md) names it in "differs" and records weir's
// own output in "weir". The engine tests run the scripts through the
// continuous and micro-batch engines on the embedded broker and compare
// with topologytest.
package conformance
