package microbatch

import (
	"log/slog"
	"time"
)

// Progress reports one batch, after Spark's StreamingQueryProgress.
type Progress struct {
	// BatchID is the batch's number in the write-ahead log.
	BatchID int64
	// Timestamp is the batch time: when it was planned.
	Timestamp time.Time
	// Trigger names the trigger.
	Trigger string
	// Replay is set for a batch run again during recovery.
	Replay bool
	// NumInputRows is the number of records processed.
	NumInputRows int64
	// InputRowsPerSecond is the rate at which records arrived: rows over
	// the time since the previous batch started.
	InputRowsPerSecond float64
	// ProcessedRowsPerSecond is rows over this batch's processing time.
	ProcessedRowsPerSecond float64
	// Durations of the batch's phases.
	Durations Durations
	// Watermark is the event-time watermark after the batch: the smallest
	// stream time among the tasks that have seen records.
	Watermark time.Time
	// Sources are the batch's ranges.
	Sources []SourceProgress
	// StateStores counts the rows of the key-value stores: after the batch,
	// or, if they were counted less than 10 s before, as counted then
	// (counting walks every row).
	StateStores []StoreProgress
}

// Durations are the phases of a batch.
type Durations struct {
	// Plan: reading end offsets and cutting ranges.
	Plan time.Duration
	// WALCommit: writing offsets/N with sync.
	WALCommit time.Duration
	// Process: running the ranges through the tasks (and ForEachBatch).
	Process time.Duration
	// Commit: flushing outputs, committing offsets, writing commits/N.
	Commit time.Duration
	// Total: the whole batch.
	Total time.Duration
}

// SourceProgress is one range of a batch.
type SourceProgress struct {
	Topic        string
	Partition    int32
	StartOffset  int64
	EndOffset    int64
	NumInputRows int64
}

// StoreProgress is the size of one store of one task.
type StoreProgress struct {
	Name      string
	Partition int32
	NumRows   int64
}

// LogValue logs the progress compactly.
func (p Progress) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("batch", p.BatchID),
		slog.String("trigger", p.Trigger),
		slog.Bool("replay", p.Replay),
		slog.Int64("rows", p.NumInputRows),
		slog.Float64("inputRowsPerSecond", p.InputRowsPerSecond),
		slog.Float64("processedRowsPerSecond", p.ProcessedRowsPerSecond),
		slog.Duration("plan", p.Durations.Plan),
		slog.Duration("walCommit", p.Durations.WALCommit),
		slog.Duration("process", p.Durations.Process),
		slog.Duration("commit", p.Durations.Commit),
		slog.Int("ranges", len(p.Sources)),
		slog.Time("watermark", p.Watermark),
	)
}
