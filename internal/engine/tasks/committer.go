package tasks

import (
	"context"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/statestore"
)

// committer is what a delivery guarantee decides about an epoch or a
// batch: where the tasks' records go and how they become durable together
// with the consumer offsets. One runs per Runtime, chosen once:
//
//   - at-least-once (atLeastOnce, at_least_once.go): the records go to the
//     plain producer; a commit flushes it (every output acknowledged), then
//     the group commits the offsets. Nothing fences a member that lost its
//     partitions, so it confirms its membership before it writes
//     changelog records, sends those only after the outputs before them
//     are acknowledged, and claims each changelog partition it restores.
//   - exactly-once (txnOutput, exactly_once.go): the records go into the
//     open transaction; a commit commits it with the offsets inside and
//     begins the next. A replaced member's transaction never commits, so
//     there is nothing to confirm or claim.
//
// The epoch end (commit.go, commit_behind.go) calls the committer at fixed
// points and never asks which guarantee runs. Calls are serialised by the
// engines (one commit at a time), but Send, which the tasks call
// concurrently.
//
// Both guarantees' methods sit where the package doc's walk of an epoch
// reaches them: the cut's (traits, startCut, changelogsAtCut,
// confirmMember, endCut) in cut.go, acked in
// layers.go, behindCommitted in held_release.go; the rest with the
// committer's type (at_least_once.go; exactly_once_send.go for txnOutput's
// Send, exactly_once.go for its commit and failures).
type committer interface {
	// Send takes a record a task writes (Output).
	Output
	// commit makes the records sent so far and positions durable for
	// the member session s (nil: a claim that ended with no session;
	// nothing to commit), adding its phases to ph. Errors wrapping
	// ErrRewind drop the epoch; ErrCommitLater keeps it for the next.
	commit(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error
	// rewind ends what an epoch that rewinds left in Kafka (the doomed
	// transaction) and returns cause, or the error that stops the
	// application instead.
	rewind(ctx context.Context, cause error) error
	// confirmMember returns an error wrapping ErrRewind if the member
	// may no longer write the epoch's n changelog records to Kafka.
	confirmMember(ctx context.Context, s kafka.Session, n int) error
	// outputsFirst returns once the outputs sent before n changelog
	// records may no longer be overtaken by them (PhaseOutputsWait).
	outputsFirst(ctx context.Context, ph *Phases, n int) error
	// claimChangelogs readies a task's logged stores after their restore
	// against the records of a replaced owner (writer.go).
	claimChangelogs(ctx context.Context, t *Task, specs []statestore.Spec) error
	// acked reads the offsets Kafka acknowledged for the changelog
	// records sent (the layers' checkpoints).
	acked() *kafka.AckedOffsets
	// close ends the committer at the runtime's Close.
	close(ctx context.Context) error

	behindCommitter
}

// behindCommitter is the committer's part of an epoch committed behind
// processing (commit_behind.go): what the cut under the barrier does and
// what becomes of the claims' records while the commit runs.
type behindCommitter interface {
	// traits are the guarantee's constants that the cut and the engine
	// read.
	traits() cutTraits
	// startCut fails the cut, or a Commit, if the epoch is doomed already.
	startCut(ctx context.Context) error
	// changelogsAtCut reports whether the cut sends the pending changelog
	// records itself (else they are held for the commit behind).
	changelogsAtCut(ctx context.Context, ph *Phases, pending int) (bool, error)
	// endCut runs last in the cut, the claims still stopped.
	endCut()
	// behindFailed settles a commit behind that failed with err: keep
	// reports that the epoch's layers are kept for the next commit.
	behindFailed(ctx context.Context, err error) (keep bool)
	// behindCommitted runs once a commit behind committed.
	behindCommitted(ctx context.Context)
	// dropHeld drops what the claims sent since a cut whose commit
	// rewinds (RewindBehind).
	dropHeld()
}
