// Package offsets stores weir's progress logs in Badger: the micro-batch
// write-ahead log (a plan per batch, then a commit) and the continuous-mode
// epoch log. It only stores; the engines in packages microbatch and
// continuous own the protocol, summarised below.
//
// # Records
//
// A Plan is batch N's planned input: a half-open offset Range [Start, End)
// per partition, the batch time, the watermark and the trigger. A Commit
// says batch N is done. An Epoch holds the next offset per partition at a
// continuous-mode epoch marker. Each has a versioned binary encoding
// (MarshalBinary, AppendBinary, UnmarshalBinary); decoders reject bad input
// with errors wrapping ErrCorrupt and never panic. Times are kept at
// millisecond precision and read back in UTC.
//
// # Usage
//
// Open one Log per directory and take a WAL per namespace (an application
// id, or one per engine instance; namespaces in one Log are independent):
//
//	wlog, err := offsets.Open(filepath.Join(stateDir, "offsets"), offsets.Options{})
//	defer wlog.Close()
//	wal, err := wlog.Namespace("wordcount")
//
// Micro-batch mode runs each batch N in this order:
//
//	wal.WritePlan(ctx, plan)  // 1. offsets/N, synced, BEFORE the batch runs
//	                          // 2. run exactly plan.Ranges; produce the output
//	                          //    and commit the offsets (one Kafka
//	                          //    transaction under exactly-once)
//	wal.WriteCommit(ctx, offsets.Commit{Batch: N, Timestamp: done}) // 3. commits/N
//
// Batch N+1 can be planned only once batch N is committed, so at most one
// plan is pending: the one Pending returns. WritePlan and WriteCommit are
// idempotent for identical records, so a replay may write them again.
//
// Recovery (at start, and when partitions are assigned) looks at Pending
// and compares a pending plan N with the offsets committed in Kafka, the
// truth under exactly-once since the offsets commit inside the batch's
// transaction:
//
//   - No pending plan: plan the next batch from the committed offsets.
//   - Every partition's committed offset is its range's End: the batch
//     committed and only commits/N was lost; WriteCommit it and go on.
//   - Every partition's committed offset is its range's Start: the batch
//     did not commit; run batch N again with exactly the same ranges, batch
//     time and watermark, so its output (and a ForEachBatch sink keyed by
//     batch id) is the same.
//   - Anything else (partitions moved, offsets were reset): the plan is
//     stale; DiscardPlan it and plan batch N afresh.
//
// A partition that moved to another instance has no plan there: its new
// owner starts from the committed offset. That is still exactly-once with
// transactional output, because the old owner's batch either committed its
// output together with its offsets (so the new owner starts after it) or
// it aborted and left neither (so the new owner reads the same records
// again). A late commit from the old owner fails, because its offsets carry
// the consumer group generation it was assigned the partition in (KIP-447).
//
// # A lost log
//
// The log is a cache of what Kafka already knows, so a log that cannot be
// opened or read (Open's error wraps ErrDamaged: a checksum, a file cut
// short or gone, an unreadable MANIFEST) is set aside and a new, empty one
// opened; weir does it at start, with a WARN naming the file and the cause.
// With no pending plan, recovery plans the next batch from the committed
// offsets, which is what each guarantee needs:
//
//   - Exactly-once: the committed offsets move only inside a batch's
//     transaction, together with its output and changelog records. A
//     batch that committed is after them; one that did not left neither
//     output nor offsets, so its records are read again. What the lost
//     plan adds — the same ranges, batch time and watermark on a replay —
//     is not needed for exactly-once output: the replay is planned afresh
//     (its ranges may be cut differently, its batch time is new), and its
//     records' output still commits once.
//   - At-least-once: the records after the committed offsets are processed
//     again, as after any crash.
//   - ForEachBatch: a sink writing idempotently by batch id must never see
//     an id again for other records. A new log would number batches from
//     zero, so weir first writes into it an empty, committed batch
//     numbered with the Unix millisecond time (trigger "wal-rebuilt"),
//     above any id a log can have reached, and numbers batches after it.
//     The replayed batch is not the lost plan's id: a sink that upserts
//     by batch id keeps the lost batch's rows, if it wrote them, beside
//     the replay's — as it would after the partition moved to another
//     instance.
//
// The continuous-mode epoch log only records progress; a new one starts
// with the next epoch.
//
// Continuous mode appends an Epoch after each epoch's Kafka commit
// succeeded (a write-after log, not a write-ahead one): it records
// progress for inspection and restarts, and Kafka's committed offsets stay
// the truth. AppendEpoch requires increasing epoch numbers.
//
// Each namespace keeps the latest Options.Retain batches and epochs
// (DefaultRetain, 100); older ones are deleted by the write that makes
// them old. A pending plan is never deleted. Batches and Epochs list what
// is retained, for `weir inspect`.
//
// # Storage
//
// Keys are "<namespace>/offsets/<batch>", "<namespace>/commits/<batch>" and
// "<namespace>/epochs/<epoch>", numbers written as 20 zero-padded digits so
// keys sort in numeric order. Every write is one Badger transaction synced
// to disk before the call returns. Badger runs with small memtables and no
// block cache: the log holds a few hundred small records.
//
// # Concurrency
//
// A Log and its WALs are safe for concurrent use. Writes to one namespace
// are serialised; reads see consistent snapshots and do not wait for
// writes. Close waits for operations in flight; every operation after it
// returns ErrClosed.
package offsets
