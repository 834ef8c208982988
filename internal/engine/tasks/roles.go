package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/weirstream/weir/offsets"
)

// EngineRole is the part of a Runtime both engines use, each inside a role
// of its own (epochs.Runtime, batches.Runtime) beside the query server's
// QueryView: the tasks, the clock and the logger, the partitions' lag, the wait for
// disk room, and the rewind after a failure — of the processing and of
// the state layers applied behind the commits.
type EngineRole interface {
	// Tasks are the member's tasks.
	Tasks() *Tasks
	// Now reads the runtime's clock.
	Now() time.Time
	// Logger is the runtime's logger.
	Logger() *slog.Logger
	// Track records a partition's position and end, for its lag.
	Track(tp offsets.TopicPartition, next, end int64)
	// WaitForDisk waits until the state volume has room again.
	WaitForDisk(ctx context.Context) error
	// StateApplyFailed is the error of a state layer that did not reach
	// Badger; the engine stops.
	StateApplyFailed() error
	// Rewind drops the work not committed after a failure.
	Rewind(ctx context.Context, cause error) error
}

var _ EngineRole = (*Runtime)(nil)
