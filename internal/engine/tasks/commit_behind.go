package tasks

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
// At-least-once with state, applied behind (ApplyStateBehind): the cut
// flushes the record caches; once every output sent so far is
// acknowledged, it checks the membership (checkMembership) and sends the
// changelog records — if the
// outputs take longer than cutOutputsWait, it takes the records from the
// tasks without sending them (holdChangelogs), for the commit behind
// (outputsAckedSoon). Then it freezes the staged state into a pending
// layer (read by the tasks, not by queries:
// statestore.Staged.FreezePending), which holds the records not sent; no
// Send is held. The commit sends those records first, once the outputs
// before them are acknowledged (sendChangelogs), then flushes the
// producer — every output and changelog record of the epoch, and those
// the claims sent since — and commits the offsets, then marks the layer
// committed and hands it to the applier (layers.go). An undelivered
// output (ErrRewind, or fatal if no retry can deliver it: see
// flushOutputs) or a member removed from its group (ErrRewind) discards
// the pending layer, and the kept ones; after ErrRewind, RewindBehind drops
// the state staged since the cut. A failed offset commit
// (ErrCommitLater), or one a stop cut short, keeps the layer pending, its
// checkpoints read and its records not sent yet: the next commit, behind
// or not, decides the kept layers first, in order — sends their records,
// applies them if its offsets commit, discards them if it rewinds, keeps
// them if it fails the same way — and a task released meanwhile drops
// its share of them (see Commit: never written to Badger or the
// changelog once the partition may be another member's).
//
// Exactly-once, state applied behind (ApplyStateBehind): the cut flushes
// the record caches and the changelogs into the open transaction, freezes
// the staged state into a pending layer (read by the tasks, not by
// queries: statestore.Staged.FreezePending) and holds the Sends that
// follow (exactly_once_send.go); the commit commits the transaction with the offsets
// and begins the next, marks the layer committed and hands it to the
// applier (layers.go), then sends the records held, in order, into the
// new transaction. If the transaction aborts, the pending layer is
// discarded, the records held are dropped and every Send fails until the
// engine has rewound (RewindBehind); committed layers still reach Badger.

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
// CommitBehind: with the state applied behind (ApplyStateBehind), or
// at-least-once with a stateless topology.
func (r *Runtime) CanCommitBehind() bool {
	return r.layers.behind != nil || (r.committer.traits().positionsAlone && r.Stateless())
}

// CommitBehind commits an epoch cut by CutBehind while the tasks go on
// processing.
//
// At-least-once: it waits until every output sent before the call is
// acknowledged — those of the records up to the cut's positions, and
// perhaps some of the records after them — then commits the offsets. An
// offset is thus committed only once every output of the records before
// it is acknowledged, as Commit does, without stopping the tasks for it.
// With state, the layers kept by earlier commits, then the epoch's, are
// committed and applied behind once the offsets are; see above for the
// failures.
//
// Exactly-once: the transaction commits with the offsets and the next
// begins; the epoch's layer is committed and applied behind; the records
// held meanwhile are sent into the new transaction (see above). A held
// record that fails when sent does not fail this epoch, which committed:
// it dooms the next (the next CutBehind or Commit rewinds).
//
// Its errors are Commit's: an output no retry delivers (fatal),
// ErrCommitLater, ErrRewind when an output was not delivered, the member
// was removed from the group or the transaction aborted (then call
// RewindBehind under the barrier). Calls must not overlap one another or
// a Commit.
func (r *Runtime) CommitBehind(ctx context.Context, c *EpochCut, s kafka.Session, ph *Phases) error {
	if ph == nil {
		ph = &Phases{}
	}
	return r.observeCommit(c.positions, func() error {
		if c.decided == nil {
			return r.committer.commit(ctx, c.positions, s, ph) // stateless at-least-once: nothing was cut
		}
		return r.commitCut(ctx, c, s, ph)
	})
}

// commitCut is CommitBehind's work for an epoch cut by cut: the layers
// kept by earlier at-least-once commits are decided first, with it.
func (r *Runtime) commitCut(ctx context.Context, c *EpochCut, s kafka.Session, ph *Phases) error {
	defer close(c.decided)
	kept, decided := r.layers.takeKept()
	defer decided()
	layers := append(kept, c.layer) // oldest first
	err := r.sendChangelogs(ctx, s, ph, layers)
	if err == nil {
		err = r.committer.commit(ctx, c.positions, s, ph)
	}
	if err != nil {
		if r.committer.behindFailed(ctx, err) {
			// Acknowledged, perhaps, but not committed: kept (see
			// Commit), as is a commit a stop cut short, for the claims'
			// last commits; changelog records not sent yet go with them.
			return r.keepLayers(err, layers...)
		}
		discardLayers(kept)
		c.layer.discard()
		return err
	}
	start := time.Now()
	err = r.commitLayers(kept, c.layer) // layers.go
	r.ObservePhase(PhaseStateApply, &ph.StateApply, c.applyWait+time.Since(start))
	r.committer.behindCommitted(ctx) // held_release.go
	return err
}

// sendChangelogs sends the changelog records the layers hold, oldest
// first (at-least-once: see cut), once every output sent before them is
// acknowledged (PhaseOutputsWait, see outputsThenChangelogs) and the
// member is known to be in its group (checkMembership).
func (r *Runtime) sendChangelogs(ctx context.Context, s kafka.Session, ph *Phases, ls []*epochLayer) error {
	n := heldChangelog(ls)
	if n == 0 {
		return nil
	}
	if err := r.committer.outputsFirst(ctx, ph, n); err != nil {
		return err
	}
	if err := r.Timed(PhaseMembership, &ph.Membership, func() error { return r.committer.confirmMember(ctx, s, n) }); err != nil {
		return err
	}
	return r.Timed(PhaseChangelog, &ph.ChangelogFlush, func() error { return r.sendHeld(ctx, ls) })
}

// heldChangelog is the number of changelog records the layers hold.
func heldChangelog(ls []*epochLayer) int {
	n := 0
	for _, l := range ls {
		if l != nil {
			n += len(l.changelog)
		}
	}
	return n
}

// sendHeld sends the changelog records the layers hold, in order. A
// layer's records are dropped from it once all of them are sent; on an
// error they stay, for the commit that decides the layer next (sending
// one again is harmless: it carries the same latest value, before any
// later epoch's).
func (r *Runtime) sendHeld(ctx context.Context, ls []*epochLayer) error {
	for _, l := range ls {
		if l == nil {
			continue
		}
		for _, tr := range l.changelog {
			if err := r.committer.Send(ctx, tr.rec); err != nil {
				return fmt.Errorf("runtime: changelog: %w", err)
			}
			r.stats.RecordsOut.Add(1)
		}
		l.changelog = nil
	}
	return nil
}

// takeKept hands the kept layers to a commit, which decides them before
// its own epoch: commits them (then applies them) once its offsets are
// committed, discards them on ErrRewind or a fatal error, or keeps them
// again (keep). Until decided returns, waitApplied waits for it, and
// dropKept for it to keep them again.
func (sl *stateLayers) takeKept() (kept []*epochLayer, decided func()) {
	sl.pendingMu.Lock()
	defer sl.pendingMu.Unlock()
	kept, sl.kept = sl.kept, nil
	if len(kept) == 0 {
		return nil, func() {}
	}
	ch := make(chan struct{})
	sl.deciding = ch
	return kept, func() {
		sl.pendingMu.Lock()
		sl.deciding = nil
		sl.pendingMu.Unlock()
		close(ch)
	}
}

// keepLayers keeps pending layers, oldest first, for the next commit to
// decide (stateLayers.kept), once their checkpoints are read, as for any
// layer once Kafka has it (layers.go). It returns cause.
func (r *Runtime) keepLayers(cause error, ls ...*epochLayer) error {
	for _, l := range ls {
		if l != nil {
			r.checkpoint(l)
		}
	}
	r.layers.keep(ls...)
	return cause
}

// discardLayers discards pending layers whose epochs rewind.
func discardLayers(ls []*epochLayer) {
	for _, l := range ls {
		l.discard()
	}
}

// RewindBehind drops, under the engine's barrier, what the tasks did
// after the cut of an epoch whose CommitBehind failed with ErrRewind: the
// staged state, its changelog records and the records held (exactly-once:
// the transaction was ended by CommitBehind). The engine then rewinds its
// tasks.
func (r *Runtime) RewindBehind(cause error) {
	if !errors.Is(cause, ErrRewind) {
		return
	}
	r.dropStaged()
	r.committer.dropHeld()
}
