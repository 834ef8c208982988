package runtime_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A replaced owner that does not know it yet (under at-least-once nothing
// fences it) writes its stale changelog records after the new owner's. A
// restore skips them: from the changelog's start, and from a checkpoint
// that recorded the newer writer generation.
func TestRestoreSkipsAReplacedWritersLateRecords(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 1)
		kafkatest.CreateTopic(t, env, out, 1)
		b := topology.NewBuilder()
		topology.NewStream(b, in, serde.String(), serde.String()).
			GroupByKey().Count(topology.Materialized("counts")).ToStream().To(out)
		topo, err := b.Build()
		require.NoError(t, err)
		appID := kafkatest.GroupID(t)
		ctx := context.Background()
		id := processor.TaskID{Subtopology: 0, Partition: 0}

		type member struct {
			rt   *runtime.Runtime
			task *runtime.Task
		}
		// join starts an instance on dir that acquires the task in the given
		// group generation (restoring the store).
		join := func(dir string, generation int32) member {
			rt, err := runtime.New(runtime.Config{
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
		// process runs keys through m's task and commits them.
		process := func(m member, keys ...string) {
			for _, k := range keys {
				require.NoError(t, m.task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte(k), Value: []byte(k), Timestamp: time.UnixMilli(offset + 1)}))
				offset++
			}
			require.NoError(t, m.rt.Commit(ctx, runtime.Positions{}, nil))
		}
		leave := func(m member) {
			m.rt.Tasks().Release(m.task)
			require.NoError(t, m.rt.Close())
		}
		// last returns the newest count output for key.
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

		a := join(t.TempDir(), 5)
		process(a, "k", "k", "x") // k=2, x=1
		bDir := t.TempDir()
		b2 := join(bDir, 7) // a stalled; the task moved to b2
		process(b2, "k", "k")
		require.Equal(t, int64(4), last("k"))
		process(a, "x", "k") // a wakes up and writes stale values: x=2, k=3
		leave(a)
		leave(b2)

		// A restore from b2's checkpoint (writer generation 7, before a's
		// late records) skips them.
		d := join(bDir, 9)
		process(d, "x")
		require.Equal(t, int64(2), last("x"), "the restore applied the replaced writer's x=2")
		leave(d)

		// So does a restore from the changelog's start.
		c := join(t.TempDir(), 10)
		process(c, "x", "k")
		require.Equal(t, int64(3), last("x"))
		require.Equal(t, int64(5), last("k"), "the restore applied the replaced writer's k=3")

		var writers []int32
		for _, rec := range kafkatest.ReadCommitted(t, env, processor.ChangelogTopic("counts").Resolve(appID)) {
			g, ok := runtime.WriterOf(rec.Headers)
			require.True(t, ok, "changelog record at %d has no writer generation", rec.Offset)
			writers = append(writers, g)
		}
		require.Equal(t, []int32{5, 5, 7, 5, 5, 9, 10, 10}, writers)
		leave(c)
	})
}
