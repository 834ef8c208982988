package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
)

// Positions are the next offsets to process, per partition.
type Positions map[offsets.TopicPartition]int64

// Commit makes everything the tasks wrote since the last Commit durable
// together with the consumer offsets in positions, for the member session s.
//
// At-least-once: the producer is flushed (every output acknowledged), then
// the offsets are committed. An output the producer gave up on wraps
// ErrRewind (the offsets stay uncommitted and the engine processes those
// records again, see flushOutputs) unless no retry can ever deliver it,
// which is fatal (explainOutput); a failed offset commit wraps
// ErrCommitLater: the engine reports it and the
// next Commit carries the offsets. The staged state is then kept, not
// applied: the usual cause is a rebalance, and a member that lost its
// partitions (stalled past its session timeout, say) must not write its
// state to Badger with a checkpoint taken after the new owner's changelog
// records — a later restore from that checkpoint would skip them and
// resume from stale state. A member that kept its partitions applies the
// kept state with its next successful commit; one that lost them releases
// the tasks, which drops it. A member the coordinator no longer knows
// (kafka.MemberGone) gets ErrRewind instead: it drops its state and
// rejoins, rather than process on as a zombie. The same holds for the
// layers an epoch committed behind left pending (commit_behind.go): a
// Commit decides them with its own epoch, before it.
//
// Exactly-once: the open transaction commits with the offsets inside it
// (see exactly_once.go); errors that abort it wrap ErrRewind.
//
// Commit does all of it with the tasks stopped; the continuous engine's
// epochs cut under its barrier and commit behind it instead
// (commit_behind.go), but for the last epoch of a claim ending.
//
// First every task's changelog is flushed: one record per key changed
// since the last Commit, with its latest value (processor's
// CoalesceChangelog), so the changelog holds the store's contents at every
// commit with fewer records than one per write. Outputs are not coalesced.
// Under at-least-once the changelog records are sent only once every
// output sent before them is acknowledged (outputsThenChangelogs).
//
// Once Kafka has the epoch, the tasks' staged state writes are frozen into
// a layer that moves into Badger with their changelog checkpoints — before
// Commit returns, or behind it (ApplyStateBehind, layers.go); after an
// abort the epoch's writes are dropped, never a frozen layer's. A layer
// that could not reach Badger fails the next Commit.
func (r *Runtime) Commit(ctx context.Context, positions Positions, s kafka.Session) error {
	return r.CommitTimed(ctx, positions, s, nil)
}

// CommitTimed is Commit, adding how long each of its phases took to ph
// (if not nil) and reporting them to the Phase hook.
func (r *Runtime) CommitTimed(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	if ph == nil {
		ph = &Phases{}
	}
	return r.observeCommit(positions, func() error { return r.commit(ctx, positions, s, ph) })
}

// commit is CommitTimed's work, inside observeCommit.
func (r *Runtime) commit(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	if err := r.StateApplyFailed(); err != nil {
		return err
	}
	if err := r.committer.startCut(ctx); err != nil {
		// As the cut: a record held during the last commit behind that
		// failed when sent doomed the open transaction, which ends
		// (rewind) before anything of the epoch is flushed into it.
		err = r.committer.rewind(ctx, err)
		if errors.Is(err, ErrRewind) {
			r.dropStaged()
		}
		return err
	}
	if err := r.flushCaches(ctx); err != nil { // record caches: before anything is committed
		return r.flushFailed(ctx, fmt.Errorf("runtime: flush record caches: %w", err))
	}
	if err := r.writeExternal(ctx, positions); err != nil { // external sinks: before Kafka (external.go)
		return r.flushFailed(ctx, err)
	}
	// The layers kept by at-least-once commits behind are decided with
	// the epoch, before it; their changelog records not sent yet go
	// before the epoch's.
	kept, decided := r.layers.takeKept()
	defer decided()
	changelog := r.pendingChangelog() + heldChangelog(kept)
	if err := r.Timed(PhaseMembership, &ph.Membership, func() error { return r.committer.confirmMember(ctx, s, changelog) }); err != nil {
		discardLayers(kept)
		r.dropStaged()
		return err
	}
	if err := r.outputsThenChangelogs(ctx, ph, kept); err != nil {
		if errors.Is(err, ErrRewind) {
			discardLayers(kept)
		} else {
			r.layers.keep(kept...)
		}
		return r.flushFailed(ctx, err)
	}
	err := r.committer.commit(ctx, positions, s, ph)
	switch {
	case errors.Is(err, ErrCommitLater):
		r.layers.keep(kept...)
		return err // kept, with the staged state, for the next commit
	case err != nil:
		discardLayers(kept)
		if errors.Is(err, ErrRewind) {
			r.dropStaged()
		}
		return err
	}
	r.externalCommitted(positions) // external.go
	applyStart := time.Now()
	err = r.applyKept(kept)
	if err == nil {
		err = r.applyCommitted()
	}
	r.ObservePhase(PhaseStateApply, &ph.StateApply, time.Since(applyStart))
	return err
}

// flushFailed settles a flush before the commit that failed (record
// caches, outputs, changelogs): one that rewinds (ErrRewind) drops the
// epoch's state, caches included — under exactly-once the output the
// transaction refused aborts it, under at-least-once an output the
// producer gave up on (flushOutputs). Otherwise err is returned and
// nothing is committed.
func (r *Runtime) flushFailed(ctx context.Context, err error) error {
	if !errors.Is(err, ErrRewind) {
		return err
	}
	r.dropStaged()
	return r.committer.rewind(ctx, err)
}

// outputsThenChangelogs sends the changelog records the kept layers
// still hold (see sendChangelogs), then the tasks'. Under at-least-once
// it first waits until every output sent before them is acknowledged
// (PhaseOutputsWait): the producer orders records within a partition
// only, so an output waiting in its retries could otherwise be overtaken
// by the changelog record of the same update, and a crash then leaves a
// changelog holding an update whose output never reached Kafka — the next
// owner restores it, and the record's replay does not write that update's
// output again (an aggregate update never written). Under exactly-once the
// transaction makes both or neither visible.
func (r *Runtime) outputsThenChangelogs(ctx context.Context, ph *Phases, kept []*epochLayer) error {
	if err := r.committer.outputsFirst(ctx, ph, r.pendingChangelog()+heldChangelog(kept)); err != nil {
		return err
	}
	return r.Timed(PhaseChangelog, &ph.ChangelogFlush, func() error {
		if err := r.sendHeld(ctx, kept); err != nil {
			return err
		}
		return r.flushChangelogs(ctx)
	})
}

// Rewind ends a transaction that a Send doomed (an error wrapping
// ErrRewind from Task.Process): it is aborted, or the producer re-created,
// and a new one begins. The engine then rewinds its tasks. Under
// at-least-once there is nothing to end.
func (r *Runtime) Rewind(ctx context.Context, cause error) error {
	r.dropStaged()
	err := r.committer.rewind(ctx, cause)
	if !errors.Is(err, ErrRewind) {
		return err
	}
	r.notify(err, nil)
	return nil
}

// Stopped reports an error that is only ctx ending: a stop, possibly while
// starting, restoring or re-initialising, which the engines' Run (and the
// App's) report as nil.
func Stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}
