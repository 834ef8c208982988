package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// Commits behind processing. The continuous engine ends an epoch in two
// parts where it can (CanCommitBehind): under its exclusive barrier, the
// cut (CutBehind) — what needs a consistent cut of every task — and then,
// while the claims go on processing the next epoch, the commit itself
// (CommitBehind). One epoch at a time: the engine waits for a commit
// behind before it cuts the next epoch, and a commit under the barrier
// (Commit) never overlaps one.
//
// At-least-once, stateless topology: the cut is the positions alone; the
// commit flushes the outputs and commits the offsets.
//
// Exactly-once, state applied behind (ApplyStateBehind): the cut flushes
// the record caches and the changelogs into the open transaction, freezes
// the staged state into a pending layer (read by the tasks, not by
// queries: statestore.Staged.FreezePending) and holds the Sends that
// follow (held.go); the commit commits the transaction with the offsets
// and begins the next, marks the layer committed and hands it to the
// applier (layers.go), then sends the records held, in order, into the
// new transaction. If the transaction aborts, the pending layer is
// discarded, the records held are dropped and every Send fails until the
// engine has rewound (RewindBehind); committed layers still reach Badger.

// PhaseHeldRelease is the sending of the records held during an
// exactly-once commit behind into the next transaction: the tasks' Sends
// wait meanwhile (held.go), though the barrier is not held.
const PhaseHeldRelease = "held_release"

// EpochCut is an epoch cut under the engine's barrier (CutBehind), for
// CommitBehind to commit behind it.
type EpochCut struct {
	positions Positions
	// txn is set for an exactly-once cut; layer is the epoch's state,
	// frozen pending (nil if the tasks wrote none), and applyWait what the
	// cut spent on state (PhaseStateApply).
	txn       bool
	layer     *epochLayer
	applyWait time.Duration
	// decided ends the wait of waitApplied for the layer (layers.go).
	decided func()
}

// Stateless reports a topology without state stores: its tasks stage no
// state and write no changelog, so an epoch's commit is its outputs' and
// its offsets' alone (see CommitBehind).
func (r *Runtime) Stateless() bool {
	for _, st := range r.cfg.Graph.Subtopologies {
		if len(st.Stores) > 0 {
			return false
		}
	}
	return true
}

// CanCommitBehind reports whether epochs may commit with CutBehind and
// CommitBehind: at-least-once with a stateless topology, or exactly-once
// with the state applied behind (ApplyStateBehind).
func (r *Runtime) CanCommitBehind() bool {
	if r.txn != nil {
		return r.layers.behind != nil
	}
	return r.Stateless()
}

// CutBehind is the part of an epoch's commit that needs the tasks
// stopped (see above), for the epoch whose records end at positions. Its
// errors are Commit's: under exactly-once an output the transaction
// refused aborts it (ErrRewind) and drops the epoch's state, as does a
// record held during the previous commit that failed when sent. After an
// error there is nothing to commit behind.
func (r *Runtime) CutBehind(ctx context.Context, positions Positions, ph *Phases) (*EpochCut, error) {
	if ph == nil {
		ph = &Phases{}
	}
	c := &EpochCut{positions: positions, txn: r.txn != nil}
	if !c.txn {
		return c, nil
	}
	if err := r.cut(ctx, c, ph); err != nil {
		return nil, r.observeCommit(positions, func() error { return err })
	}
	return c, nil
}

// cut is CutBehind's exactly-once work.
func (r *Runtime) cut(ctx context.Context, c *EpochCut, ph *Phases) error {
	if err := r.StateApplyFailed(); err != nil {
		return err
	}
	if err := r.txn.held.failed(); err != nil {
		return r.flushFailed(ctx, err)
	}
	if err := r.flushCaches(ctx); err != nil {
		return r.flushFailed(ctx, fmt.Errorf("runtime: flush record caches: %w", err))
	}
	// As Commit: the previous layer's checkpoints are read before this
	// epoch's changelog records are written (layers.go).
	start := time.Now()
	if err := r.waitCheckpointed(); err != nil {
		return err
	}
	c.applyWait = time.Since(start)
	if err := r.Timed(PhaseChangelog, &ph.ChangelogFlush, func() error { return r.flushChangelogs(ctx) }); err != nil {
		return r.flushFailed(ctx, err)
	}
	start = time.Now()
	l, err := r.freezeStaged(true)
	if err != nil {
		r.dropStaged()
		return err
	}
	c.layer = l
	c.applyWait += time.Since(start)
	c.decided = r.layers.cutPending()
	r.txn.held.hold()
	return nil
}

// CommitBehind commits an epoch cut by CutBehind while the tasks go on
// processing.
//
// At-least-once: it waits until every output sent before the call is
// acknowledged — those of the records up to the cut's positions, and
// perhaps some of the records after them — then commits the offsets. An
// offset is thus committed only once every output of the records before
// it is acknowledged, as Commit does, without stopping the tasks for it.
// There is nothing to check before it (no changelog, see
// checkMembership), to flush or to apply.
//
// Exactly-once: the transaction commits with the offsets and the next
// begins; the epoch's layer is committed and applied behind; the records
// held meanwhile are sent into the new transaction (see above). A held
// record that fails when sent does not fail this epoch, which committed:
// it dooms the next (the next CutBehind or Commit rewinds).
//
// Its errors are Commit's: a delivery failure (fatal), ErrCommitLater,
// ErrRewind when the member was removed from the group or the transaction
// aborted (then call RewindBehind under the barrier). Calls must not
// overlap one another or a Commit.
func (r *Runtime) CommitBehind(ctx context.Context, c *EpochCut, s kafka.Session, ph *Phases) error {
	if ph == nil {
		ph = &Phases{}
	}
	return r.observeCommit(c.positions, func() error {
		if !c.txn {
			return r.commitKafka(ctx, c.positions, s, ph)
		}
		return r.commitCut(ctx, c, s, ph)
	})
}

// commitCut is CommitBehind's exactly-once work.
func (r *Runtime) commitCut(ctx context.Context, c *EpochCut, s kafka.Session, ph *Phases) error {
	defer c.decided()
	if err := r.commitKafka(ctx, c.positions, s, ph); err != nil {
		// The transaction is ended (recover); the records held and the
		// Sends until the rewind belong to the epoch it rewinds.
		c.layer.discard()
		r.txn.held.fail(err)
		return err
	}
	start := time.Now()
	c.layer.commit()
	err := r.applyFrozenLayer(ctx, c.layer)
	r.ObservePhase(PhaseStateApply, &ph.StateApply, c.applyWait+time.Since(start))
	if rerr := r.Timed(PhaseHeldRelease, nil, func() error { return r.txn.release(ctx) }); rerr != nil {
		r.log.Warn("weir: an output held during the commit failed; the next epoch rewinds", "err", rerr)
	}
	return err
}

// applyFrozenLayer is applyFrozen for a layer that may be nil.
func (r *Runtime) applyFrozenLayer(ctx context.Context, l *epochLayer) error {
	if l == nil {
		return nil
	}
	return r.applyFrozen(ctx, l)
}

// RewindBehind drops, under the engine's barrier, what the tasks did
// after the cut of an epoch whose CommitBehind failed with ErrRewind: the
// staged state, its changelog records and the records held. The
// transaction was ended by CommitBehind; under at-least-once there is
// nothing to drop. The engine then rewinds its tasks.
func (r *Runtime) RewindBehind(cause error) {
	if !errors.Is(cause, ErrRewind) {
		return
	}
	r.dropStaged()
	if r.txn != nil {
		r.txn.held.clear()
	}
}

// ExactlyOnce reports transactional output (EnableExactlyOnce).
func (r *Runtime) ExactlyOnce() bool { return r.txn != nil }
