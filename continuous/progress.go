package continuous

import (
	"log/slog"
	"time"
)

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
	// Partitions are the next offsets committed, per partition.
	Partitions []PartitionProgress
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
	)
}
