package runtime

import (
	"cmp"
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

// observeCommit runs commit between the Committing and Committed hooks
// and reports its outcome for positions (notify).
func (r *Runtime) observeCommit(positions Positions, commit func() error) (err error) {
	if hook := r.cfg.Hooks.Committing; hook != nil {
		hook()
	}
	if hook := r.cfg.Hooks.Committed; hook != nil {
		start := time.Now()
		defer func() { hook(time.Since(start), err) }()
	}
	defer func() { r.notify(err, positions) }()
	return commit()
}

// commit is CommitTimed's work, inside observeCommit.
func (r *Runtime) commit(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	if err := r.StateApplyFailed(); err != nil {
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
	if err := r.Timed(PhaseMembership, &ph.Membership, func() error { return r.checkMembership(ctx, s, changelog) }); err != nil {
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
	err := r.commitKafka(ctx, positions, s, ph)
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
	if r.txn != nil {
		err = r.txn.recover(ctx, err)
		r.txn.held.clear()
	}
	return err
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
	if r.txn == nil && r.pendingChangelog()+heldChangelog(kept) > 0 {
		if err := r.Timed(PhaseOutputsWait, &ph.OutputsWait, func() error { return r.flushOutputs(ctx) }); err != nil {
			return err
		}
	}
	return r.Timed(PhaseChangelog, &ph.ChangelogFlush, func() error {
		if err := r.sendHeld(ctx, kept); err != nil {
			return err
		}
		return r.flushChangelogs(ctx)
	})
}

// flushOutputs waits until every record sent to the at-least-once
// producer is acknowledged. A record no retry can deliver (explainOutput)
// is fatal. One the producer gave up on for a cause that heals rewinds
// (ErrRewind): sarama gives a record back at once, retries left or not,
// when the connection to a partition's leader broke and no new leader is
// known yet — a broker killed while the controller elects ("broker not
// connected", even 20 s into an outage its retries would outlast) — and
// an epoch with an output missing must not commit. The epoch is not committed, so
// the engine goes back to the committed offsets, drops the state staged
// since and restores it, as a restart would, without stopping the
// application. Rewinds in a row back off as exactly-once's do
// (rewindBackoff).
func (r *Runtime) flushOutputs(ctx context.Context) error {
	err := r.producer.Flush(ctx)
	if err == nil {
		r.deliveryRewinds.Store(0)
		return nil
	}
	heals, fatal := r.undelivered(ctx, err)
	if fatal != nil {
		return r.failing(fmt.Errorf("runtime: flush outputs: %w", fatal))
	}
	if !heals {
		return fmt.Errorf("runtime: flush outputs: %w", err)
	}
	n := int(r.deliveryRewinds.Add(1))
	wait := rewindBackoff(n)
	_ = kafka.Pause(ctx, wait) // a stop rewinds at once: the engine ends anyway
	if n > 1 {
		return fmt.Errorf("%w: an output was not delivered (%d in a row; retried after %v): %w", ErrRewind, n, wait, err)
	}
	return fmt.Errorf("%w: an output was not delivered: %w", ErrRewind, err)
}

func (r *Runtime) commitKafka(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	if r.txn != nil {
		return r.Timed(PhaseTxnCommit, &ph.TxnCommit, func() error { return r.txn.commit(ctx, positions, s) })
	}
	if err := r.Timed(PhaseFlush, &ph.Flush, func() error { return r.flushOutputs(ctx) }); err != nil {
		return err
	}
	if len(positions) == 0 || s == nil {
		return nil
	}
	for tp, next := range positions {
		s.MarkOffset(tp.Topic, tp.Partition, next)
	}
	sent := time.Now()
	if err := r.Timed(PhaseOffsetCommit, &ph.OffsetCommit, func() error { return s.Commit(ctx) }); err != nil {
		if kafka.MemberGone(err) {
			// Removed from the group: the partitions are another member's
			// now. Stop at once — every record processed from here on is a
			// zombie's — drop the state and rejoin.
			return fmt.Errorf("%w: %w", ErrRewind, err)
		}
		return fmt.Errorf("%w: %w", ErrCommitLater, err)
	}
	r.aliveAt = sent
	return nil
}

// checkMembership keeps a removed member from writing its epoch's
// changelog under at-least-once, where nothing fences it: a member with
// changelog records to write that has not heard from the coordinator for
// half a session timeout — its process stalled (a GC or VM pause,
// SIGSTOP), or a batch ran long — first asks whether it is still in the
// group (Admin.Heartbeat). If it was removed, its partitions
// have new owners that restored without this epoch, and its changelog
// records would land after theirs: it writes nothing, drops the epoch and
// rewinds (ErrRewind), and rejoins. An answer it cannot read lets the
// commit go on (the commit then tells). Restores skip what a stall in the
// middle of the flush still lets through (writer.go).
func (r *Runtime) checkMembership(ctx context.Context, s kafka.Session, changelog int) error {
	if r.txn != nil || s == nil {
		return nil
	}
	if time.Since(r.aliveAt) < cmp.Or(r.cfg.SessionTimeout, kafka.DefaultSessionTimeout)/2 || changelog == 0 {
		return nil
	}
	sent := time.Now()
	err := r.admin.Heartbeat(ctx, s.GroupMetadata())
	switch {
	case err == nil:
		r.aliveAt = sent
		return nil
	case kafka.MemberGone(err):
		return fmt.Errorf("%w: removed from the group before the commit: %w", ErrRewind, err)
	default:
		r.log.Debug("weir: membership check failed; committing anyway", "err", err)
		return nil
	}
}

// Rewind ends a transaction that a Send doomed (an error wrapping
// ErrRewind from Task.Process): it is aborted, or the producer re-created,
// and a new one begins. The engine then rewinds its tasks. Under
// at-least-once there is nothing to end.
func (r *Runtime) Rewind(ctx context.Context, cause error) error {
	r.dropStaged()
	if r.txn == nil {
		r.notify(cause, nil)
		return nil
	}
	err := r.txn.recover(ctx, cause)
	r.txn.held.clear() // the records held, if any, are the rewound epoch's
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
