package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
)

// An output the producer refuses because the run is stopping is not the
// input record's fault: no bad-record policy applies to it (a good record
// in the dead-letter topic would be a record lost), the error goes back to
// the engine, which commits what came before and stops.
func TestOutputNotSentIsNotABadRecord(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		rt, in := passThrough(t, env, tasks.DeadLetter)
		ctx := context.Background()
		require.NoError(t, rt.Prepare(ctx))
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(t, err)

		stopped, cancel := context.WithCancel(ctx)
		cancel()
		err = task.Process(stopped, kafka.Record{Topic: in, Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(1)})
		require.ErrorIs(t, err, context.Canceled)
		require.NotContains(t, err.Error(), "dead-letter", "the bad-record policy was applied to a good record")
		require.Zero(t, rt.Stats().DeadLetter.Load(), "a good record was dead-lettered")
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, nil))
		require.Empty(t, kafkatest.ReadCommitted(t, env, tasks.DeadLetterTopic(in)))
	})
}
