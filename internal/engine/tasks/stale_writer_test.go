package tasks_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// A claim whose member is out of its group — kgo reports generation -1
// once the coordinator answered UNKNOWN_MEMBER_ID, and a claim started
// then acquires its task with it — is a zombie: the partition is another
// member's. Its task must not take the current owner's writer generation
// from the changelog, or its stale changelog records (here k=3, written
// after the owner's k=5) are indistinguishable from the owner's, and a
// restore applies them: the store goes back in time, and the owner's next
// update builds on the old value (the reliability suite's aggregate gone
// back to an account's first input, PostgreSQL branches, Kafka 4.4, seed 3).
func TestAZombieWithoutAGenerationDoesNotWriteAsTheOwner(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, out := countTopology(t, env)
		appID := kafkatest.GroupID(t)
		ctx := context.Background()
		id := processor.TaskID{Subtopology: 0, Partition: 0}

		type member struct {
			rt   *tasks.Runtime
			task *tasks.Task
		}
		join := func(dir string, generation int32) member {
			rt, err := tasks.New(tasks.Config{
				ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
				Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: dir,
			})
			require.NoError(t, err)
			require.NoError(t, rt.Prepare(ctx))
			task, err := rt.Tasks().Acquire(ctx, id, generation)
			require.NoError(t, err)
			return member{rt, task}
		}
		offset := int64(0)
		process := func(m member, keys ...string) {
			for _, k := range keys {
				require.NoError(t, m.task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte(k), Value: []byte(k), Timestamp: time.UnixMilli(offset + 1)}))
				offset++
			}
			require.NoError(t, m.rt.Commit(ctx, tasks.Positions{}, nil))
		}
		leave := func(m member) {
			m.rt.Tasks().Release(m.task)
			require.NoError(t, m.rt.Close())
		}
		last := func(key string) int64 {
			var n int64
			found := false
			for _, rec := range kafkatest.ReadCommitted(t, env, out) {
				if string(rec.Key) == key {
					v, err := serde.Int64().Deserialize(out, rec.Value)
					require.NoError(t, err)
					n, found = v, true
				}
			}
			require.True(t, found, "no output for %q", key)
			return n
		}

		owner := join(t.TempDir(), 7)
		process(owner, "k", "k") // k=2
		zombie := join(t.TempDir(), -1)
		process(owner, "k", "k", "k") // k=5
		process(zombie, "k")          // the zombie's k=3, after the owner's k=5
		leave(zombie)
		leave(owner)

		next := join(t.TempDir(), 8) // restores from the changelog's start
		process(next, "k")
		require.Equal(t, int64(6), last("k"), "the restore applied the zombie's k=3")
		leave(next)
	})
}
