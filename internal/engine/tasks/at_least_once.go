package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/statestore"
)

// atLeastOnce is the at-least-once committer (committer.go): the tasks'
// records go to the plain producer, and a commit flushes it, then commits
// the offsets through the group session.
type atLeastOnce struct {
	rt       *Runtime
	producer *kafka.Producer
	// aliveAt is when the last offset commit or membership check that
	// succeeded was sent (see checkMembership); commits are serialised.
	aliveAt time.Time
	// deliveryRewinds counts the rewinds in a row that an undelivered
	// output caused (flushOutputs).
	deliveryRewinds atomic.Int32
}

var _ committer = (*atLeastOnce)(nil)

// Send hands r to the producer.
func (a *atLeastOnce) Send(ctx context.Context, r kafka.Record) error {
	return a.producer.Send(ctx, r)
}

// commit flushes the producer (PhaseFlush), then marks and commits the
// offsets (PhaseOffsetCommit). A failed offset commit wraps
// ErrCommitLater, but for a member the coordinator no longer knows,
// which rewinds (ErrRewind).
func (a *atLeastOnce) commit(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	r := a.rt
	if err := r.Timed(PhaseFlush, &ph.Flush, func() error { return a.flushOutputs(ctx) }); err != nil {
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
	a.aliveAt = sent
	return nil
}

// rewind has nothing to end in Kafka: what the producer delivered of the
// epoch stays (at-least-once), its offsets were not committed.
func (a *atLeastOnce) rewind(_ context.Context, cause error) error { return cause }

// outputsFirst waits, if there are changelog records to send, until every
// output sent before them is acknowledged (see outputsThenChangelogs).
func (a *atLeastOnce) outputsFirst(ctx context.Context, ph *Phases, n int) error {
	if n == 0 {
		return nil
	}
	return a.rt.Timed(PhaseOutputsWait, &ph.OutputsWait, func() error { return a.flushOutputs(ctx) })
}

// claimChangelogs writes the task's writer markers (Task.claimChangelogs).
func (a *atLeastOnce) claimChangelogs(ctx context.Context, t *Task, specs []statestore.Spec) error {
	return t.claimChangelogs(ctx, specs)
}

// close leaves the producer to the runtime's Close.
func (a *atLeastOnce) close(context.Context) error { return nil }

// behindFailed keeps the epoch's layers when its outputs were
// acknowledged, perhaps, but its offsets not committed (ErrCommitLater), or
// a stop cut the commit short: see Commit.
func (a *atLeastOnce) behindFailed(ctx context.Context, err error) bool {
	return errors.Is(err, ErrCommitLater) || Stopped(ctx, err)
}

// dropHeld: nothing is held.
func (a *atLeastOnce) dropHeld() {}

// flushOutputs waits until every record sent to the at-least-once
// producer is acknowledged. A record no retry can deliver (explainOutput)
// is fatal. One the producer gave up on for a cause that heals rewinds
// (ErrRewind): sarama gives a record back at once, retries left or not,
// when the connection to a partition's leader broke and no new leader is
// known yet — a broker killed while the controller elects ("broker not
// connected", even 20 s into an outage its retries would outlast) — and
// an epoch with an output missing must not commit. The epoch is not
// committed, so the engine goes back to the committed offsets, drops the
// state staged since and restores it, as a restart would, without
// stopping the application. Rewinds in a row back off as exactly-once's
// do (rewindBackoff).
func (a *atLeastOnce) flushOutputs(ctx context.Context) error {
	err := a.producer.Flush(ctx)
	if err == nil {
		a.deliveryRewinds.Store(0)
		return nil
	}
	r := a.rt
	heals, fatal := r.undelivered(ctx, err)
	if fatal != nil {
		return r.failing(fmt.Errorf("runtime: flush outputs: %w", fatal))
	}
	if !heals {
		return fmt.Errorf("runtime: flush outputs: %w", err)
	}
	n := int(a.deliveryRewinds.Add(1))
	wait := rewindBackoff(n)
	_ = kafka.Pause(ctx, wait) // a stop rewinds at once: the engine ends anyway
	if n > 1 {
		return fmt.Errorf("%w: an output was not delivered (%d in a row; retried after %v): %w", ErrRewind, n, wait, err)
	}
	return fmt.Errorf("%w: an output was not delivered: %w", ErrRewind, err)
}

// checkMembership keeps a removed member from writing its epoch's
// changelog, where nothing fences it: a member with changelog records to
// write that has not heard from the coordinator for half a session
// timeout — its process stalled (a GC or VM pause, SIGSTOP), or a batch
// ran long — first asks whether it is still in the group
// (Admin.Heartbeat). If it was removed, its partitions have new owners
// that restored without this epoch, and its changelog records would land
// after theirs: it writes nothing, drops the epoch and rewinds
// (ErrRewind), and rejoins. An answer it cannot read lets the commit go
// on (the commit then tells). Restores skip what a stall in the middle of
// the flush still lets through (writer.go).
func (a *atLeastOnce) checkMembership(ctx context.Context, s kafka.Session, changelog int) error {
	if s == nil {
		return nil
	}
	r := a.rt
	if time.Since(a.aliveAt) < cmp.Or(r.cfg.SessionTimeout, kafka.DefaultSessionTimeout)/2 || changelog == 0 {
		return nil
	}
	sent := time.Now()
	err := r.admin.Heartbeat(ctx, s.GroupMetadata())
	switch {
	case err == nil:
		a.aliveAt = sent
		return nil
	case kafka.MemberGone(err):
		return fmt.Errorf("%w: removed from the group before the commit: %w", ErrRewind, err)
	default:
		r.log.Debug("weir: membership check failed; committing anyway", "err", err)
		return nil
	}
}

// cutOutputsWait bounds how long an at-least-once cut waits, under the
// engine's barrier, for the outputs sent before its changelog records
// (outputsAckedSoon).
const cutOutputsWait = 20 * time.Millisecond

// outputsAckedSoon reports whether an at-least-once cut sends its
// changelog records itself: there are some (pending, as
// pendingChangelog counts them), no kept layer holds older
// ones, and every output sent so far is acknowledged within
// cutOutputsWait (PhaseOutputsWait). The sends then have the producer's
// input to themselves — about 3 ms a word-count epoch on Kafka 4.4, where
// sent behind the barrier they queue with the claims' outputs for 66–76
// ms, and the commit behind falls behind the next epoch end
// (bench/results/kafka-4.4-commit-path-and-linger-2026-12-02-to-04/2026-12-02-changelog-sent-behind-the-barrier.md). A
// broker slower than that, or refusing the outputs, never holds the
// barrier longer: the records are held for the commit behind
// (sendChangelogs). Its error is a delivery failure (see flushOutputs).
func (a *atLeastOnce) outputsAckedSoon(ctx context.Context, ph *Phases, pending int) (bool, error) {
	if pending == 0 || a.rt.layers.keptChangelog() {
		return false, nil
	}
	bctx, cancel := context.WithTimeout(ctx, cutOutputsWait)
	defer cancel()
	err := a.rt.Timed(PhaseOutputsWait, &ph.OutputsWait, func() error { return a.flushOutputs(bctx) })
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return false, nil
	}
	return err == nil, err
}
