package batches

import (
	"context"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// Runtime is the part of a *tasks.Runtime the micro-batch engine uses
// once New has wired it (the driver, state applied behind commits): the
// tasks and the clock, the partitions' offsets a batch plan reads, the
// ranges it reads, the commit, and the rewind after a failure. New takes
// the whole runtime; everything after goes through this role, so that the
// engine's dependence on the runtime is these fifteen methods (seven of
// them tasks.EngineRole's).
type Runtime interface {
	tasks.EngineRole
	// Plan is the topic plan the runtime prepared.
	Plan() *tasks.TopicPlan
	// EndOffsets are the partitions' ends.
	EndOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
	// StartOffsets are the partitions' log starts.
	StartOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
	// ReadableEnds are the partitions' ends a read_committed reader sees,
	// and whether a transaction is still open below them.
	ReadableEnds(ctx context.Context, topic string, partitions []int32) (map[int32]int64, bool, error)
	// GroupCommitted are the group's committed offsets of the partitions.
	GroupCommitted(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
	// ReadRange reads the records of a partition in [from, to).
	ReadRange(ctx context.Context, topic string, partition int32, from, to int64, fn func(kafka.Record) error) error
	// InterceptSinks hands the tasks' sink records to fn.
	InterceptSinks(fn func(context.Context, kafka.Record) error)
	// Commit commits a batch at positions.
	Commit(ctx context.Context, positions tasks.Positions, s kafka.Session) error
}

var _ Runtime = (*tasks.Runtime)(nil)
