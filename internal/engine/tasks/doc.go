// Package tasks is what weir's two engines share: the continuous engine
// (internal/engine/epochs, behind package continuous) and the micro-batch
// engine (internal/engine/batches, behind package microbatch). It holds
// the topic plan, the tasks that run a topology per partition on the
// members of a consumer group, their state (staged writes, layers on
// their way into Badger, restore from changelogs, standbys, global
// tables), the committer that makes an epoch or a batch durable under the
// application's guarantee, and a read-only view for interactive queries.
//
// # Roles
//
// A Runtime has three callers, each with its own part:
//
//   - The application builds it (New; EnableExactlyOnce under
//     exactly-once) and an engine takes it (ApplyStateBehind), then works
//     through its role (tasks.EngineRole inside epochs.Runtime or
//     batches.Runtime). The engine's Driver (driver.go) calls Prepare
//     once — the preflight (preflight.go: every source and sink topic
//     exists, each sub-topology's sources are co-partitioned, existing
//     internal topics fit, the cluster has exactly-once's transactional
//     features) and the creation of the internal topics — joins the group
//     (groupConfig) and takes a task per claimed partition (Tasks,
//     tasks.go: Acquire restores its stores, state.go and rebuild.go;
//     Release drops it). The engine feeds each task records
//     (Task.Process) and commits: Commit (commit.go) with the tasks
//     stopped, or CutBehind and CommitBehind (cut.go, commit_behind.go)
//     while they go on. A commit's error that wraps ErrRewind sends every
//     task back to the committed offsets (Rewind, RewindBehind).
//   - The committer (committer.go) is the guarantee: atLeastOnce
//     (at_least_once.go: the producer is flushed, then the group commits
//     the offsets) or txnOutput (exactly_once.go: the records go into a
//     transaction that commits with the offsets; its send path is in
//     exactly_once_send.go, the release of the records held during a
//     commit behind in held_release.go). Both guarantees' parts at the cut
//     are in cut.go. The epoch end calls it at fixed points and never asks
//     which guarantee runs.
//   - The query server (internal/query) sees a QueryView (query.go): the
//     plan, readiness, and the stores' committed rows.
//
// What the engines observe (commit phases, lags, restoring tasks) is in
// observe.go, read by the metrics through metrics.Source; the bad-record
// policy in badrecords.go; the errors in errors.go.
//
// # A continuous exactly-once epoch
//
// The steps one input record R goes through, from its claim to Badger.
// Each names the functions that do it and the one file they are in; the
// files come in this order and none comes twice. The engine's epoch end
// drives steps 4, 5 and 9, and CommitBehind steps 6, 7 and 8, as their
// caller. The tools the steps use — the phases' timing and the commit
// hooks (observe.go), the applier's queue (Behind, behind.go), the
// transactional session (internal/txn) — are not steps.
//
//  1. Claim (internal/engine/epochs/engine.go). Engine.Claim takes R from
//     its partition's claim, read_committed, and under the engine's
//     shared barrier calls Task.Process.
//  2. Process (tasks.go). Task.Process runs the pure processor.Task on R.
//     Its state writes go to the task's staging layer
//     (statestore.Staged); its outputs to Task.emit; a failure to the
//     bad-record policy (handleBadRecord). A changelog record per key
//     changed waits in the task, coalesced, until the cut.
//  3. Send (exactly_once_send.go). Task.emit hands each output to the
//     committer: txnOutput.Send adds it to the open transaction
//     (txnOutput.send, internal/txn's Session.Send) or, while the previous
//     epoch's transaction commits, holds it in order (heldSends.add) for
//     the next one, which that commit's step 8 sends it into.
//  4. Cut (cut.go). At the epoch interval Engine.endEpoch takes the
//     exclusive barrier — every claim stopped between two records — runs
//     the wall-clock punctuators, reads the positions (the next offset of
//     every claimed partition) and calls Runtime.CutBehind, which takes the
//     committer's constants (txnOutput.traits) for its EpochCut. Its cut
//     (Runtime.cut): StateApplyFailed (a layer that did not reach Badger
//     stops the engine), txnOutput.startCut (heldSends.failed: a record
//     held during the previous commit that failed dooms this epoch:
//     ErrRewind), flushCaches (the record caches' outputs, through step 3's
//     Send, into the transaction), txnOutput.changelogsAtCut (always, under
//     exactly-once) and confirmMember (nothing to confirm: KIP-447 fences a
//     replaced member), flushChangelogs (R's changelog records, through
//     step 3's Send, into the transaction), freezeStaged (the staging
//     layers frozen pending: read by the tasks, not by queries),
//     stateLayers.cutPending, and txnOutput.endCut (heldSends.hold: the
//     Sends from now on are held). The barrier is released; the claims go
//     on with the next epoch.
//  5. Commit behind (commit_behind.go). Engine.goBehind runs
//     Runtime.CommitBehind in the background (a stop lets it finish for
//     EpochCut.StopGrace). commitCut decides the epoch with the layers
//     earlier at-least-once commits kept (stateLayers.takeKept; none
//     under exactly-once): sendChangelogs (none is held under
//     exactly-once), then committer.commit.
//  6. Transaction (exactly_once.go). txnOutput.commit (commitTxn) ends the
//     open transaction with the positions as the group's offsets and the
//     member's group metadata (KIP-447: a fenced member's commit fails):
//     R's outputs, the changelog records of its state and its offset
//     become visible together, or none of them. Then the next
//     transaction begins. A failure is recovered (recover: abort, or
//     re-create the producer) and wraps ErrRewind.
//  7. State (layers.go). commitLayers marks the epoch's layer committed
//     (epochLayer.commit: queries read it from now) and applyFrozen reads
//     its checkpoints (checkpoint: the offsets Kafka acknowledged for this
//     member's changelog records, txnOutput.acked) and queues it on the
//     applier, which may wait for room (pendingLayers); there applyLayer
//     writes its rows and checkpoints into Badger in one batch
//     (badgerstore.DB.Apply) and drops the layer. R's state is now in
//     Badger.
//  8. Release (held_release.go). txnOutput.behindCommitted waits out the
//     committed transaction's markers (markersPause) and sends the records
//     held since step 4, in order, into the new transaction
//     (txnOutput.release, heldSends.release; each through step 3's
//     txnOutput.send); then the Sends go to it again. It comes after
//     step 7, not 6: while the commit waits for the applier's room the
//     held records are what bounds the claims.
//  9. Progress (internal/engine/epochs/epochlog.go). Engine.committed
//     hands the epoch to the epoch log (epochWriter.add,
//     offsets.WAL.AppendEpoch) and reports its progress.
//
// If step 6 fails, commitCut discards the pending layer and dooms the
// held records (txnOutput.behindFailed, heldSends.fail: every Send fails
// until the rewind); the next epoch end (Engine.settle) takes the barrier
// and calls RewindBehind: the staged state since the cut and the held
// records are dropped (heldSends.clear), and every claim ends; the group
// session restarts them at the committed offsets, and the released tasks'
// stores restore from the committed changelog. Committed layers still
// reach Badger. A held record that fails at step 8 does not fail the
// epoch, which committed: it dooms the next, whose step 4 (or Commit)
// rewinds.
//
// Under at-least-once the steps are the same with atLeastOnce as the
// committer: step 3 sends to the producer (atLeastOnce.Send,
// at_least_once.go), step 4 sends the changelog
// records only once the outputs before them are acknowledged
// (outputsAckedSoon; else they go with the layer to step 5), step 6
// flushes the producer and commits the offsets through the group session
// (a failure wraps ErrCommitLater: the layer is kept for the next commit),
// and before writing changelog records a member that has not heard from
// its coordinator for a while confirms it is still in the group
// (checkMembership); nothing is held, so step 8 has nothing to release.
// commit_behind.go's comment has the failures.
//
// A claim that ends, an epoch with external sinks, and every micro-batch
// commit with the tasks stopped instead: Commit (commit.go) does steps 4
// to 7 in one call (nothing was held: no step 8). The micro-batch protocol around it is in package
// offsets' doc.
package tasks
