package tasks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// A layer's checkpoint is the end of this member's own changelog records,
// never the changelog's end when it is applied. A member that stalls right
// after its commit (SIGSTOP, a GC pause) past its session timeout wakes
// with its partition already another member's, which has restored and
// written on; had it checkpointed the changelog's end then, a later restore
// on its state dir would start past the new owner's records and run on
// its own stale state for good (a store partition back at its state of
// before the stall).
func TestCheckpointIsTheMembersOwnChangelogEnd(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		t.Run("at-least-once", func(t *testing.T) {
			h := newALOBehind(t, env, 1)
			testOwnChangelogEnd(t, env, h.rt, h.tasks[0], h.app, h.in, func() error { return h.commitBehind(&commitSession{}) })
		})
		t.Run("exactly-once", func(t *testing.T) {
			topo, in, _ := countTopology(t, env)
			app := kafkatest.GroupID(t)
			rt := layersRuntime(t, env, topo.Graph(), app, nil)
			t.Cleanup(func() { require.NoError(t, rt.Close()) })
			task, err := rt.Tasks().Acquire(context.Background(), processor.TaskID{Subtopology: 0, Partition: 0}, 1)
			require.NoError(t, err)
			testOwnChangelogEnd(t, env, rt, task, app, in, func() error {
				return rt.Commit(context.Background(), tasks.Positions{}, noOffsets{})
			})
		})
	})
}

// testOwnChangelogEnd counts a key once with task (partition 0 of in, its
// only claim) and commits,
// while a new owner's record — count 41, a later generation — lands on
// the changelog before the member could read the changelog's end behind
// its commit (or after its layer, if it reads none); then the member runs
// the partition again on its state dir, and must restore that record.
func testOwnChangelogEnd(t *testing.T, env *kafkatest.Env, rt *tasks.Runtime, task *tasks.Task, app, in string, commit func() error) {
	ctx := context.Background()
	changelog := app + "-counts-changelog"
	v41, err := serde.Int64().Serialize(changelog, 41)
	require.NoError(t, err)
	successor := kafka.Record{
		Topic: changelog, Partition: 0, Key: []byte("k"), Value: v41,
		Headers: []kafka.Header{{Key: tasks.HeaderWriter, Value: []byte("2")}},
	}
	id := processor.TaskID{Subtopology: 0, Partition: 0}

	var armed, written atomic.Bool
	armed.Store(true)
	defer armed.Store(false)
	c := env.Cluster()
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		lo := req.(*kmsg.ListOffsetsRequest)
		if len(lo.Topics) == 0 || lo.Topics[0].Topic != changelog || !armed.CompareAndSwap(true, false) {
			return nil, nil, false
		}
		c.SleepControl(func() {
			kafkatest.Produce(t, env, successor)
			written.Store(true)
		})
		return nil, nil, false
	})

	require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
	require.NoError(t, commit())
	require.Eventually(t, func() bool {
		s, err := tasks.DBReader(rt, "counts", 0)
		require.NoError(t, err)
		defer s.Close()
		_, ok := taskstest.CountIn(t, rt, "counts", s, "k")
		return ok
	}, 10*time.Second, 5*time.Millisecond, "the layer never reached Badger")
	armed.Store(false)
	if !written.Load() {
		kafkatest.Produce(t, env, successor) // the new owner writes after the layer, then
	}

	rt.Tasks().Release(task)
	task, err = rt.Tasks().Acquire(ctx, id, 3)
	require.NoError(t, err)
	defer rt.Tasks().Release(task)
	n, ok := taskstest.Count(t, rt, "counts", 0, "k")
	require.True(t, ok)
	require.EqualValues(t, 41, n, "the restore skipped the new owner's record: the checkpoint was past it")
}
