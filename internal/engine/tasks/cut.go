package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// The cut of an epoch or a batch: what its end takes from the tasks while
// they are stopped — the record caches flushed, the changelog records sent
// (or taken to be sent behind), the staged state frozen into a layer.

// EpochCut is an epoch cut under the engine's barrier (CutBehind), for
// CommitBehind to commit behind it.
type EpochCut struct {
	positions Positions
	// grace and holds are the committer's traits, stopGrace and
	// holdsSends.
	grace time.Duration
	holds bool
	// layer is the epoch's state, frozen pending (nil if the tasks wrote
	// none), and applyWait what the cut spent on state (PhaseStateApply).
	layer     *epochLayer
	applyWait time.Duration
	// decided, closed by the commit behind once it has decided the epoch,
	// ends the wait of waitApplied for the layer (layers.go); nil for a
	// stateless at-least-once cut, the positions alone.
	decided chan struct{}
}

// StopGrace is how long the cut's CommitBehind may run on after the
// engine's stop: under exactly-once a transaction's commit cut short would
// leave its outcome unknown and the records held for the next one unsent;
// under at-least-once none (the claims' last commits carry its offsets).
func (c *EpochCut) StopGrace() time.Duration { return c.grace }

// HoldsSends reports that the claims' Sends wait in a bounded buffer
// while the cut's CommitBehind runs (exactly-once: held for the next
// transaction), so the engine needs no bound of its own on how far the
// claims run ahead of the commit.
func (c *EpochCut) HoldsSends() bool { return c.holds }

// CutBehind is the part of an epoch's commit that needs the tasks
// stopped (see commit_behind.go), for the epoch whose records end at
// positions. Its errors are Commit's: under exactly-once an output the transaction
// refused aborts it (ErrRewind) and drops the epoch's state, as does a
// record held during the previous commit that failed when sent; under
// at-least-once a member removed from its group before the cut wrote its
// changelog records rewinds (ErrRewind, see checkMembership). After an
// error there is nothing to commit behind.
func (r *Runtime) CutBehind(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) (*EpochCut, error) {
	if ph == nil {
		ph = &Phases{}
	}
	tr := r.committer.traits()
	c := &EpochCut{positions: positions, grace: tr.stopGrace, holds: tr.holdsSends}
	if tr.positionsAlone && r.Stateless() {
		return c, nil
	}
	if err := r.cut(ctx, c, s, ph); err != nil {
		return nil, r.observeCommit(positions, func() error { return err })
	}
	return c, nil
}

// cut is CutBehind's work but for a stateless at-least-once topology.
func (r *Runtime) cut(ctx context.Context, c *EpochCut, s kafka.Session, ph *Phases) error {
	if err := r.StateApplyFailed(); err != nil {
		return err
	}
	if err := r.committer.startCut(ctx); err != nil {
		return r.flushFailed(ctx, err)
	}
	if err := r.flushCaches(ctx); err != nil {
		return r.flushFailed(ctx, fmt.Errorf("runtime: flush record caches: %w", err))
	}
	var held []taskRecord
	pending := r.pendingChangelog()
	now, err := r.committer.changelogsAtCut(ctx, ph, pending)
	if err != nil {
		return r.flushFailed(ctx, err)
	}
	if now {
		// As Commit: the member is still in its group before this
		// epoch's changelog records are written.
		if err := r.Timed(PhaseMembership, &ph.Membership, func() error { return r.committer.confirmMember(ctx, s, pending) }); err != nil {
			r.dropStaged()
			return err
		}
		if err := r.Timed(PhaseChangelog, &ph.ChangelogFlush, func() error { return r.flushChangelogs(ctx) }); err != nil {
			return r.flushFailed(ctx, err)
		}
	} else {
		// Held for the commit behind, which sends them once the outputs
		// before them are acknowledged (sendChangelogs).
		if held, err = r.holdChangelogs(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	l, err := r.freezeStaged(true)
	if err != nil {
		r.dropStaged()
		return err
	}
	if l == nil && len(held) > 0 {
		l = &epochLayer{}
	}
	if l != nil {
		l.changelog = held
	}
	c.layer = l
	c.applyWait = time.Since(start)
	c.decided = r.layers.cutPending()
	r.committer.endCut()
	return nil
}

// StateApplyFailed returns the error of the first layer that did not
// reach Badger, if any: the engine stops.
func (r *Runtime) StateApplyFailed() error {
	if r.layers.behind == nil {
		return r.layers.failed
	}
	return r.layers.behind.Err()
}

// The committers' parts at the cut, in the order CutBehind and cut call
// them: the guarantee's constants (traits: a stateless at-least-once epoch
// is cut by its positions alone); an epoch already doomed fails first
// (startCut); the changelog records go into the epoch at the cut, or with
// its layer to the commit behind (changelogsAtCut), once the member is
// known to be in its group (confirmMember); the claims' Sends are held
// from the end of the cut (endCut).

// cutTraits are a guarantee's constants, read by the cut (CutBehind) and
// through its EpochCut by the engine.
type cutTraits struct {
	// positionsAlone: a stateless topology's epoch is cut by its positions
	// alone (nothing to hold while it commits).
	positionsAlone bool
	// stopGrace is how long a commit behind may run on after a stop.
	stopGrace time.Duration
	// holdsSends: the claims' Sends wait in a bounded buffer while a
	// commit runs behind, so the claims need no other bound.
	holdsSends bool
}

// commitStopGrace bounds an exactly-once commit behind after a stop.
const commitStopGrace = 30 * time.Second

// traits: the Sends after the cut are held for the next transaction, a
// bounded buffer, even in a stateless epoch; a transaction's commit cut
// short would leave its outcome unknown and the records held for the next
// one unsent, so a stop lets it finish for up to commitStopGrace.
func (t *txnOutput) traits() cutTraits {
	return cutTraits{positionsAlone: false, stopGrace: commitStopGrace, holdsSends: true}
}

// traits: a stateless epoch's commit behind is its outputs' flush and its
// offsets' commit; a stop cuts it short (the claims' last commits carry
// its offsets); the claims' records go to the producer while it runs, and
// the engine bounds how far the claims run ahead.
func (a *atLeastOnce) traits() cutTraits {
	return cutTraits{positionsAlone: true}
}

// startCut fails the cut, or a Commit, if a record held during the
// previous commit failed when sent: the open transaction is doomed.
func (t *txnOutput) startCut(context.Context) error { return t.held.failed() }

// startCut: nothing dooms an at-least-once epoch before its cut.
func (a *atLeastOnce) startCut(context.Context) error { return nil }

// failed returns the error that doomed the open transaction, if any.
func (h *heldSends) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// changelogsAtCut: the changelog records go into the open transaction at
// the cut, whatever became of the outputs.
func (t *txnOutput) changelogsAtCut(context.Context, *Phases, int) (bool, error) { return true, nil }

// changelogsAtCut is outputsAckedSoon.
func (a *atLeastOnce) changelogsAtCut(ctx context.Context, ph *Phases, pending int) (bool, error) {
	return a.outputsAckedSoon(ctx, ph, pending)
}

// confirmMember: a replaced member's transaction is fenced (KIP-447), its
// changelog records never become visible.
func (t *txnOutput) confirmMember(context.Context, kafka.Session, int) error { return nil }

// confirmMember is checkMembership.
func (a *atLeastOnce) confirmMember(ctx context.Context, s kafka.Session, n int) error {
	return a.checkMembership(ctx, s, n)
}

// endCut holds the claims' Sends from here on for the next transaction
// (exactly_once_send.go).
func (t *txnOutput) endCut() { t.held.hold() }

// endCut holds nothing: the claims' records go to the producer.
func (a *atLeastOnce) endCut() {}

// hold makes Sends wait here (under the engine's exclusive barrier).
func (h *heldSends) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = true
}

// flushCaches forwards what every task's record caches hold (see
// processor.Task.FlushCache); Commit calls it first, so the epoch or batch
// carries the flushed outputs and the changelog records they cause.
func (r *Runtime) flushCaches(ctx context.Context) error {
	if r.tasks.cache == nil {
		return nil
	}
	return r.tasks.eachTask(func(t *Task) error {
		t.ctx = ctx
		defer func() { t.ctx = nil }()
		return t.task.FlushCache()
	})
}

// flushChangelogs sends every task's pending changelog records (one per
// key changed since the last commit) into the epoch or batch being
// committed.
func (r *Runtime) flushChangelogs(ctx context.Context) error {
	return r.tasks.eachTask(func(t *Task) error {
		t.ctx = ctx
		defer func() { t.ctx = nil }()
		return t.task.FlushChangelog()
	})
}

// holdChangelogs takes every task's pending changelog records, as
// flushChangelogs would send them, without sending them: an at-least-once
// cut hands them to its commit behind (sendChangelogs).
func (r *Runtime) holdChangelogs(ctx context.Context) ([]taskRecord, error) {
	var held []taskRecord
	err := r.tasks.eachTask(func(t *Task) error {
		t.ctx = ctx
		t.hold = func(rec kafka.Record) { held = append(held, taskRecord{task: t, rec: rec}) }
		defer func() { t.ctx, t.hold = nil, nil }()
		return t.task.FlushChangelog()
	})
	return held, err
}

// pendingChangelog is the number of changelog records the tasks have to
// flush.
func (r *Runtime) pendingChangelog() int {
	n := 0
	_ = r.tasks.eachTask(func(t *Task) error {
		n += t.task.PendingChangelog()
		return nil
	})
	return n
}

// dropStaged drops every task's staged writes and the changelog records
// describing them, after an abort, and discards the kept layers.
func (r *Runtime) dropStaged() {
	r.layers.discardKept()
	_ = r.tasks.eachTask(func(t *Task) error {
		for _, st := range t.staged {
			st.Reset()
		}
		t.task.DiscardChangelog()
		t.dropExternal()
		return nil
	})
}

// freezeStaged freezes every task's staging layers, pending (see
// statestore.Staged.FreezePending) or committed; nil if none wrote.
func (r *Runtime) freezeStaged(pending bool) (*epochLayer, error) {
	var l epochLayer
	err := r.tasks.eachTask(func(t *Task) error {
		for _, st := range t.staged {
			freeze := st.Freeze
			if pending {
				freeze = st.FreezePending
			}
			if fl := freeze(); fl != nil {
				l.stores = append(l.stores, frozenStore{layer: fl, spec: st.spec, partition: t.id.Partition, writer: t.writer, task: t})
			}
		}
		return nil
	})
	if err != nil || len(l.stores) == 0 {
		return nil, err
	}
	return &l, nil
}

// cutPending records that an epoch was cut with its layer pending: until
// decided is closed, waitApplied waits for its commit.
func (sl *stateLayers) cutPending() (decided chan struct{}) {
	ch := make(chan struct{})
	sl.pendingMu.Lock()
	sl.pending = ch
	sl.pendingMu.Unlock()
	return ch
}
