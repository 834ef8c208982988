// Package microbatch is weir's micro-batch execution mode, after Spark
// Structured Streaming: the input is cut into batches of planned offset
// ranges, each plan written to a write-ahead log before its batch runs.
//
// Applications select it through the root package, whose App runs the
// engine; this package holds what its users configure (Config, Trigger)
// and what the engine hands back (Record, Progress):
//
//	app, err := weir.New(topo,
//		weir.WithBrokers("localhost:9092"),
//		weir.WithApplicationID("report"),
//		weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow()}),
//		weir.WithGuarantee(weir.ExactlyOnce)) // AtLeastOnce by default
//	err = app.Run(ctx) // returns when everything available at start is processed
//
// # A batch
//
// For batch N the engine plans, for each partition this instance owns, the
// range [start, end): start is the next offset to process (the committed
// offset after a restart), end the partition's end offset at planning time,
// capped by MaxRecordsPerBatch (shared among the partitions in proportion to
// their backlog) and by MaxBytesPerBatch (estimated from the sizes of the
// records of earlier batches). Then:
//
//  1. offsets/N — the plan, the batch time and the watermark — is written to
//     the Badger write-ahead log with sync;
//  2. exactly those ranges are processed; sink outputs go to Kafka, or to
//     the ForEachBatch function;
//  3. the producer is flushed and the consumer offsets (the ranges' ends)
//     are committed;
//  4. commits/N is written.
//
// # Triggers
//
// Continuously (the default) starts the next batch as soon as the previous
// one ends; ProcessingTime(d) starts one every d; Once runs one batch;
// AvailableNow processes everything available at start, in as many batches
// as the limits need, drains the stages behind repartition topics, and
// stops — a bounded batch job over the same topology, whose final tables
// equal the continuous mode's over the same input.
//
// # Recovery
//
// At start the engine looks for a plan without a commit. For each of its
// ranges still owned here it compares the group's committed offset: equal
// to the range's end, the batch had committed and only commits/N was lost
// (it is written now); equal to the start, batch N runs again with exactly
// the same ranges and batch id; anything else makes the plan stale and it is
// dropped. A partition that moved to another instance has no plan there;
// its new owner starts from the committed offset.
//
// # Guarantees (at-least-once)
//
// Offsets are committed only after every output of the batch is
// acknowledged, so no input is lost. A crash between the outputs and the
// commit runs the batch again: its outputs and state changes may appear
// twice. ForEachBatch receives stable batch ids and ranges across such
// replays, so a sink that writes idempotently by batch id (an upsert keyed
// by it) stores each batch once — exactly so for stateless topologies.
//
// # Guarantees (exactly-once)
//
// With WithGuarantee(weir.ExactlyOnce) each batch is one Kafka transaction
// (package exactlyonce): its outputs, changelog and dead-letter records and
// the consumer offsets of its ranges, with the group metadata of the live
// member (KIP-447), commit together in step 3 or not at all. Outputs become
// visible to read_committed readers at the batch's commit. A transaction
// that fails is aborted (or its outcome settled by a new producer epoch)
// and every task rewinds to the committed offsets, its state restored from
// the committed changelog; the pending plan then runs again with the same
// ranges and batch id. ForEachBatch is outside the transaction: it is called
// before the commit and again on a replay, so it still needs to write
// idempotently by batch id.
//
// The write-ahead log is a cache too: one Badger cannot open or read is
// set aside at start and a new one opened, which numbers its batches from
// the Unix millisecond time, so an id is never given again to other
// records. A plan it held is then not replayed with its id: the records
// are planned afresh under a new one (see package offsets, "A lost log").
package microbatch
