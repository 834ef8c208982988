package tasks

import (
	"errors"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
	"github.com/weirstream/weir/offsets"
)

// What the runtime reports for metrics and health: commit latencies and
// rebalances through Config's hooks, and — read on demand — the tasks still
// restoring and the lag of every partition this instance consumes.

// Hooks receive the runtime's events; they must be safe for concurrent use
// and return quickly. Nil hooks are skipped.
type Hooks struct {
	// Committing is called when a Commit starts; Committed when it ends.
	Committing func()
	// Committed is called after every Commit: how long it took, and its
	// error (nil for a commit).
	Committed func(took time.Duration, err error)
	// Rebalanced is called when this member receives an assignment: the
	// generation of the group.
	Rebalanced func(generation int32)
	// Prepared is called once the preflight passed and the topics are
	// ready: the member is about to join its group.
	Prepared func()
	// Restoring is called with the number of tasks restoring their
	// stores whenever it changes.
	Restoring func(tasks int64)
	// Rewound is called when the epoch or batch in progress was dropped
	// and the tasks go back to the committed offsets — an aborted
	// transaction, a member removed from its group: the cause's class
	// (RewindCause) and the error.
	Rewound func(cause string, err error)
	// CommitDeferred is called when an at-least-once offset commit failed
	// after the outputs were acknowledged; the next commit carries it.
	CommitDeferred func(err error)
	// Progressed is called after a commit that committed offsets: the
	// application makes progress.
	Progressed func()
	// Failing is called as soon as the runtime knows an error that stops
	// the application (an output no retry delivers), before the engine
	// has wound down and returned it.
	Failing func(err error)
	// StateRebuilt is called when a damaged state directory was set aside
	// to be rebuilt: what (StoresRebuilt, WALRebuilt) and the damage's
	// reason (the statedir.Reason* names).
	StateRebuilt func(what, reason string)
	// DiskFull is called with an error wrapping ErrDiskFull when the
	// engines pause for the state volume's free space, and with nil when
	// they resume (WaitForDisk).
	DiskFull func(err error)
	// Phase is called with how long one phase of an epoch end or a batch
	// commit took (the Phase* names).
	Phase func(phase string, took time.Duration)
	// Restored is called after a task restored a store partition from its
	// changelog before running on it (not for standby and warm-up
	// catch-ups, nor for a restore that found nothing to apply): the
	// store, the changelog records it applied and skipped, and how long
	// the restore took, from its checkpoint lookup to its last Badger
	// write.
	Restored func(store string, records int64, took time.Duration)
}

// The phases of an epoch end or a batch commit, as the Phase hook and
// weir_epoch_phase_seconds{phase} name them.
const (
	// PhasePaused is how long processing stood still for the epoch end:
	// the exclusive barrier held (continuous mode).
	PhasePaused = "paused"
	// PhaseBarrierWait is the wait for the claims to leave the records
	// they were processing.
	PhaseBarrierWait = "barrier_wait"
	// PhaseCommitWait is an epoch end's wait, with processing stopped,
	// for the previous epoch's at-least-once commit behind, which ran
	// past its grace (continuous mode).
	PhaseCommitWait = "commit_wait"
	// PhasePunctuate is the wall-clock punctuators.
	PhasePunctuate = "punctuate"
	// PhaseMembership is the at-least-once membership check.
	PhaseMembership = "membership_check"
	// PhaseOutputsWait is the at-least-once wait, before the changelog
	// records are sent, until every output sent before them is
	// acknowledged (see Commit).
	PhaseOutputsWait = "outputs_wait"
	// PhaseChangelog is sending the coalesced changelog records.
	PhaseChangelog = "changelog_flush"
	// PhaseFlush is waiting for every output to be acknowledged.
	PhaseFlush = "producer_flush"
	// PhaseOffsetCommit is the at-least-once OffsetCommit.
	PhaseOffsetCommit = "offset_commit"
	// PhaseTxnCommit is the transaction's commit (its offsets, EndTxn)
	// and the next one's begin.
	PhaseTxnCommit = "txn_commit"
	// PhaseStateApply is moving staged state into Badger with the
	// changelog checkpoints (their end offsets asked of the brokers).
	PhaseStateApply = "state_apply"
	// PhaseEpochLog is appending the epoch to the epoch log.
	PhaseEpochLog = "epoch_log"
)

// Phases are how long the phases of one epoch end or batch commit took;
// zero for one that did not run.
type Phases struct {
	Paused, BarrierWait, CommitWait, Punctuate, Membership, OutputsWait, ChangelogFlush, Flush,
	OffsetCommit, TxnCommit, StateApply, EpochLog time.Duration
}

// Timed runs fn as phase: it adds its duration to *d (if d is not nil)
// and reports it to the Phase hook.
func (r *Runtime) Timed(phase string, d *time.Duration, fn func() error) error {
	start := time.Now()
	err := fn()
	r.ObservePhase(phase, d, time.Since(start))
	return err
}

// ObservePhase adds took to *d (if d is not nil) and reports it to the
// Phase hook.
func (r *Runtime) ObservePhase(phase string, d *time.Duration, took time.Duration) {
	if d != nil {
		*d += took
	}
	if h := r.cfg.Hooks.Phase; h != nil {
		h(phase, took)
	}
}

// lags tracks the lag of every partition a claim consumes.
type lags struct {
	mu sync.Mutex
	m  map[offsets.TopicPartition]int64
}

// Track records the position of a claim: next is the next offset to
// process, end the partition's high watermark as the fetch last saw it.
func (r *Runtime) Track(tp offsets.TopicPartition, next, end int64) {
	lag := max(end-next, 0)
	r.lag.mu.Lock()
	if r.lag.m == nil {
		r.lag.m = map[offsets.TopicPartition]int64{}
	}
	r.lag.m[tp] = lag
	r.lag.mu.Unlock()
}

// untrack forgets a partition whose claim ended.
func (r *Runtime) untrack(tp offsets.TopicPartition) {
	r.lag.mu.Lock()
	delete(r.lag.m, tp)
	r.lag.mu.Unlock()
}

// Lags returns the lag of every partition this instance consumes: the
// high watermark minus the next offset to process.
func (r *Runtime) Lags() map[offsets.TopicPartition]int64 {
	r.lag.mu.Lock()
	defer r.lag.mu.Unlock()
	out := make(map[offsets.TopicPartition]int64, len(r.lag.m))
	for tp, l := range r.lag.m {
		out[tp] = l
	}
	return out
}

// Restoring returns the number of tasks restoring their stores.
func (r *Runtime) Restoring() int64 { return r.restoring.Load() }

// Prepared reports whether Prepare succeeded: the topics are ready and the
// member is about to join, or has joined, the group.
func (r *Runtime) Prepared() bool { return r.prepared.Load() }

// RewindCause classifies the cause of a rewind for metrics: "abortable",
// "fenced", "indefinite" (a transaction's outcome unknown, the producer
// re-created), "member_gone" (removed from the group), or "other".
func RewindCause(err error) string {
	switch {
	case errors.Is(err, txn.ErrFenced):
		return "fenced"
	case errors.Is(err, txn.ErrIndefinite):
		return "indefinite"
	case errors.Is(err, txn.ErrAbortable), errors.Is(err, txn.ErrNoTransaction):
		return "abortable"
	case kafka.MemberGone(err):
		return "member_gone"
	}
	return "other"
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

// notify calls the hooks of a Commit's or a Rewind's outcome.
func (r *Runtime) notify(err error, positions Positions) {
	h := r.cfg.Hooks
	switch {
	case err == nil:
		if len(positions) > 0 && h.Progressed != nil {
			h.Progressed()
		}
	case errors.Is(err, ErrRewind):
		if h.Rewound != nil {
			h.Rewound(RewindCause(err), err)
		}
	case errors.Is(err, ErrCommitLater):
		if h.CommitDeferred != nil {
			h.CommitDeferred(err)
		}
	}
}

// restoringBy changes the count of tasks restoring by delta.
func (r *Runtime) restoringBy(delta int64) {
	n := r.restoring.Add(delta)
	if h := r.cfg.Hooks.Restoring; h != nil {
		h(n)
	}
}

// failing reports a fatal error to the Failing hook and returns it.
func (r *Runtime) failing(err error) error {
	if h := r.cfg.Hooks.Failing; h != nil {
		h(err)
	}
	return err
}
