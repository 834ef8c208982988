package continuous

import (
	"log/slog"
	"time"
)

// DefaultEpochInterval is the epoch length when none is set
// (weir.WithEpochInterval).
const DefaultEpochInterval = 100 * time.Millisecond

// Progress reports one committed epoch that processed records, as
// microbatch.Progress reports a batch. Epochs without input (the idle ones,
// ten a second by default) are not reported.
type Progress struct {
	// Epoch is the epoch's number (it goes on across restarts with the
	// epoch log).
	Epoch int64
	// Timestamp is when the epoch ended.
	Timestamp time.Time
	// NumInputRows is the number of records processed in the epoch.
	NumInputRows int64
	// InputRowsPerSecond is rows over the time since the previous epoch
	// ended.
	InputRowsPerSecond float64
	// CommitDuration is how long the epoch's commit took: flush and offset
	// commit, or the transaction's, and moving staged state into Badger.
	CommitDuration time.Duration
	// CommittedBehind reports a commit made while the claims went on
	// processing (at-least-once with a stateless topology, or
	// exactly-once: the transaction commits behind): processing stood
	// still only for Phases.Paused.
	CommittedBehind bool
	// Phases is how long each phase of the epoch's end took.
	Phases Phases
	// Partitions are the next offsets committed, per partition.
	Partitions []PartitionProgress
}

// Phases is how long each phase of an epoch's end took; zero for a phase
// that did not run. The metric weir_epoch_phase_seconds{phase} has the
// same phases.
type Phases struct {
	// Paused is how long processing stood still: the exclusive barrier
	// held, from BarrierWait's end. It holds Punctuate and, unless the
	// epoch committed behind, every phase of the commit; for an
	// exactly-once epoch committed behind, the changelog flush and the
	// freezing of the state (part of StateApply) only.
	Paused time.Duration
	// BarrierWait is the wait for the claims to finish the records they
	// were processing.
	BarrierWait time.Duration
	// CommitWait is the wait, with processing stopped (part of Paused),
	// for the previous epoch's at-least-once commit behind when it ran
	// past its grace: an epoch interval after this epoch end began. It
	// bounds what a crash duplicates; it stays zero while commits keep
	// up.
	CommitWait time.Duration
	// Punctuate is the wall-clock punctuators.
	Punctuate time.Duration
	// Membership is the at-least-once check that the member is still in
	// its group, made before writing changelog records.
	Membership time.Duration
	// OutputsWait is waiting, before the changelog records are sent,
	// until every output sent before them is acknowledged
	// (at-least-once, with state).
	OutputsWait time.Duration
	// ChangelogFlush is sending the changelog records of the epoch.
	ChangelogFlush time.Duration
	// Flush is waiting until every output is acknowledged
	// (at-least-once).
	Flush time.Duration
	// OffsetCommit is the consumer offset commit (at-least-once).
	OffsetCommit time.Duration
	// TxnCommit is the transaction's commit with its offsets, and the
	// next one's begin (exactly-once).
	TxnCommit time.Duration
	// StateApply is the epoch end's share of moving the staged state into
	// Badger: freezing it into a layer, and waiting when the layers of
	// earlier epochs still wait for Badger (at most two may). The write
	// itself, with the changelog checkpoints, happens behind processing:
	// weir_epoch_phase_seconds{phase="state_apply_behind"}.
	StateApply time.Duration
	// EpochLog is appending the epoch to the epoch log (on a goroutine
	// of its own: it neither pauses processing nor delays the next
	// commit).
	EpochLog time.Duration
}

// LogValue logs the phases that ran, in milliseconds.
func (p Phases) LogValue() slog.Value {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var attrs []slog.Attr
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"paused_ms", p.Paused}, {"barrier_wait_ms", p.BarrierWait}, {"commit_wait_ms", p.CommitWait}, {"punctuate_ms", p.Punctuate},
		{"membership_ms", p.Membership}, {"outputs_wait_ms", p.OutputsWait}, {"changelog_flush_ms", p.ChangelogFlush}, {"flush_ms", p.Flush},
		{"offset_commit_ms", p.OffsetCommit}, {"txn_commit_ms", p.TxnCommit}, {"state_apply_ms", p.StateApply},
		{"epoch_log_ms", p.EpochLog},
	} {
		if f.d > 0 {
			attrs = append(attrs, slog.Float64(f.name, ms(f.d)))
		}
	}
	return slog.GroupValue(attrs...)
}

// PartitionProgress is one partition's committed position.
type PartitionProgress struct {
	Topic     string
	Partition int32
	Next      int64
}

// LogValue logs the progress compactly.
func (p Progress) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("epoch", p.Epoch),
		slog.Int64("rows", p.NumInputRows),
		slog.Duration("commit", p.CommitDuration),
		slog.Duration("paused", p.Phases.Paused),
		slog.Bool("behind", p.CommittedBehind),
		slog.Any("phases", p.Phases),
	)
}
