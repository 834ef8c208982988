// Package sink is weir's interface to external stores — a database
// table behind a service's API, say — written exactly once from a
// topology's ToSink, in both execution modes.
//
// A Sink is handed, for each task (a sub-topology's partition), the
// records the task wrote to it during an epoch (continuous mode) or a
// batch (micro-batch mode), in a Batch. It writes them in one
// transaction of its own together with the task's progress row, and that
// row is how weir knows, after any crash, what the store already holds.
// The package postgres is the PostgreSQL implementation.
//
// # The id of a write: the task's input position
//
// A Batch's id is its To Position: for each source partition of the
// task, the next offset after the input records whose outputs the batch
// holds. Replaying the same input gives the same position, whichever
// instance replays it, and positions only grow, so a store that keeps the
// last position it committed per task can tell a write it already has
// (every record's input is covered by it) from a new one. Epoch and batch
// numbers cannot serve: continuous epochs are cut by time, so a replay
// cuts them elsewhere, and a partition that moves to another instance
// meets that instance's own batch numbers.
//
// # The protocol, per task
//
//  1. Claim. When an instance acquires a task it calls Sink.Claim with
//     its writer generation (the consumer group generation it was
//     assigned the partition in). In one statement the sink counts the
//     claim in the task's progress row — unless the row holds a newer
//     generation — and returns the position committed so far and the
//     claim's count, its fencing token. From then on every write of an
//     earlier claim is refused: a zombie's (a member that stalled past
//     its session timeout and woke up after its partitions moved, or the
//     previous process of a static member that restarted in the same
//     generation).
//  2. Process. The task's outputs to the sink are buffered per task.
//     Outputs of an input record the claimed position covers are dropped:
//     the store has them from a previous owner's write, or from this
//     instance's own write whose Kafka commit did not happen.
//  3. Write, before Kafka's commit. At the epoch's or batch's commit,
//     before the Kafka transaction (exactly-once) or the offset commit
//     (at-least-once), every task with buffered records gets one
//     Sink.Write: the records, the position To, the generation and the
//     token. In one database transaction the sink locks the progress row,
//     refuses a token that is not the row's latest claim (ErrFenced),
//     leaves out records
//     the row's position already covers, writes the rest and stores To.
//  4. Kafka's commit. Only once every task's write returned does the
//     epoch commit in Kafka. A failed write leaves the epoch uncommitted:
//     the engine retries it with back-off, then rewinds to the committed
//     offsets, as after an aborted transaction.
//
// So the store is never behind Kafka's committed offsets (step 3 comes
// before step 4); it is ahead of them by the writes whose Kafka commit
// failed. A crash or a failed commit replays from Kafka's committed
// offsets, on the instance that had the task or on another; the replay
// rebuilds the state and the Kafka outputs (under exactly-once the
// aborted transaction left none), and step 2 drops the sink outputs the
// store already holds. That needs the outputs to be a function of the
// input up to the position; a task that reads several partitions may
// interleave them differently on a replay (docs/guarantees.md names the
// consequence).
//
// # Bad records
//
// A record the store refuses (a constraint, a value a column cannot
// hold) is handed to Batch.Bad with the store's error, which applies the
// application's bad-record policy: skip it, dead-letter it, or fail the
// write (and the application). A sink never lets one bad record block its
// task. The sink keeps the ids of the records it left out, with the
// store's errors, in the task's progress until weir's Kafka commit
// (Batch.Refused, Progress.Refused): a replay of their input hands them
// to the policy again, since their dead letters went into the commit
// that failed.
//
// # Errors
//
// Write and Claim errors wrapping ErrFenced rewind the instance (it
// rejoins the group); ErrPermanent stops the application (a missing
// table, a permission: no retry helps); the error Batch.Bad returned
// stops it too. Any other error is taken for an outage: retried with
// back-off, the task's epoch waiting meanwhile.
package sink
