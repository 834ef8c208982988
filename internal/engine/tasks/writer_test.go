package tasks_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A replaced owner that does not know it yet (under at-least-once nothing
// fences it) writes its stale changelog records after the new owner
// restored. A restore skips them: from the changelog's start (those before
// the new owner's first write too, thanks to its marker), and from a
// checkpoint that recorded the newer writer generation.
func TestRestoreSkipsAReplacedWritersLateRecords(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, out := countTopology(t, env)
		appID := kafkatest.GroupID(t)
		ctx := context.Background()
		id := processor.TaskID{Subtopology: 0, Partition: 0}

		type member struct {
			rt   *tasks.Runtime
			task *tasks.Task
		}
		// join starts an instance on dir that acquires the task in the given
		// group generation (restoring the store).
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
		// process runs keys through m's task and commits them.
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
		process(a, "x")     // a wakes up: x=2, before b2 wrote anything
		process(b2, "k", "k")
		require.Equal(t, int64(4), last("k"))
		process(a, "k") // and k=3, after b2's k=4
		leave(a)
		leave(b2)

		// A restore from b2's checkpoint (writer generation 7, before a's
		// late k) skips it.
		d := join(bDir, 9)
		process(d, "k")
		require.Equal(t, int64(5), last("k"), "the restore applied the replaced writer's k=3")
		leave(d)

		// A restore from the changelog's start skips a's late x: b2's marker
		// came before it.
		c := join(t.TempDir(), 10)
		process(c, "x", "k")
		require.Equal(t, int64(2), last("x"), "the restore applied the replaced writer's x=2")
		require.Equal(t, int64(6), last("k"))

		var writers []string
		for _, rec := range kafkatest.ReadCommitted(t, env, processor.ChangelogTopic("counts").Resolve(appID)) {
			g, ok := tasks.WriterOf(rec.Headers)
			require.True(t, ok, "changelog record at %d has no writer generation", rec.Offset)
			w := fmt.Sprint(g)
			if tasks.IsWriterMarker(rec.Headers) {
				w = "M" + w
			}
			writers = append(writers, w)
		}
		// Markers (M) and store writes, with their writer generations.
		require.Equal(t, []string{"M5", "5", "5", "M7", "5", "7", "5", "M9", "9", "M10", "10", "10"}, writers)
		leave(c)
	})
}

// countTopology creates an input and an output topic of one partition and
// returns the topology that counts the input's keys into the store
// "counts" (logged to its changelog) and writes the counts out.
func countTopology(t *testing.T, env *kafkatest.Env) (topo *topology.Topology, in, out string) {
	t.Helper()
	in, out = kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 1)
	kafkatest.CreateTopic(t, env, out, 1)
	topo, err := taskstest.Counting(in, out).Build()
	require.NoError(t, err)
	return topo, in, out
}
