package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// layersRuntime starts an exactly-once runtime of g that applies state
// behind its commits, running before ahead of each layer's Badger write.
func layersRuntime(t *testing.T, env *kafkatest.Env, g *processor.Graph, appID string, before func() error) *tasks.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := tasks.New(tasks.Config{
		ApplicationID: appID, Graph: g, Kafka: env.Config(),
		Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: t.TempDir(),
	})
	require.NoError(t, err)
	require.NoError(t, rt.EnableExactlyOnce(ctx, appID+"-txn"))
	rt.ApplyStateBehind()
	tasks.SetBeforeApply(rt, before)
	require.NoError(t, rt.Prepare(ctx))
	return rt
}

// A commit returns once Kafka has the epoch, before its state writes are
// in Badger: the task goes on processing on top of the frozen layer (it
// reads the layer's count), a query sees the layer but never the epoch in
// progress, an abort drops only the epoch in progress, and the task's
// release waits until the layers are in Badger, checkpointed.
func TestStateLayersApplyBehindTheCommit(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, out := countTopology(t, env)
		ctx := context.Background()
		gate := make(chan struct{})
		applying := make(chan struct{}, 16) // a layer's Badger write starts
		rt := layersRuntime(t, env, topo.Graph(), kafkatest.GroupID(t), func() error {
			applying <- struct{}{}
			<-gate
			return nil
		})
		defer func() { require.NoError(t, rt.Close()) }()
		id := processor.TaskID{Subtopology: 0, Partition: 0}
		task, err := rt.Tasks().Acquire(ctx, id, 1)
		require.NoError(t, err)
		offset := int64(0)
		process := func(key string) {
			require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte(key), Value: []byte(key), Timestamp: time.UnixMilli(offset + 1)}))
			offset++
		}
		query := func(key string) ([]byte, bool) {
			s, err := rt.QueryStore("counts", 0)
			require.NoError(t, err)
			defer s.Close()
			v, ok, err := s.(statestore.KeyValueStore).Get([]byte(key))
			require.NoError(t, err)
			return v, ok
		}
		badger := func(key string) ([]byte, bool) {
			s, err := tasks.DBReader(rt, "counts", 0)
			require.NoError(t, err)
			defer s.Close()
			v, ok, err := s.(statestore.KeyValueStore).Get([]byte(key))
			require.NoError(t, err)
			return v, ok
		}

		process("k")
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, noOffsets{}))
		<-applying // epoch 1's layer waits for its Badger write
		_, ok := badger("k")
		require.False(t, ok, "the layer is not in Badger yet")
		one, ok := query("k")
		require.True(t, ok, "a query does not see the committed layer")

		process("k") // reads k=1 from the frozen layer: k=2
		v, _ := query("k")
		require.Equal(t, one, v, "a query saw the epoch in progress")
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, noOffsets{}))
		two, _ := query("k")
		require.NotEqual(t, one, two)

		process("k") // k=3, then the epoch aborts
		require.NoError(t, rt.Rewind(ctx, fmt.Errorf("%w: test", txn.ErrAbortable)))
		v, _ = query("k")
		require.Equal(t, two, v)
		_, ok = badger("k")
		require.False(t, ok, "two layers wait for Badger")
		process("k") // on top of the frozen layers: k=3 again

		// Two layers wait (pendingLayers): the next commit would wait for
		// room, and the release waits for both to reach Badger.
		close(gate)
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, noOffsets{}))
		rt.Tasks().Release(task)
		three, ok := badger("k")
		require.True(t, ok)
		info, err := rt.Store("counts")
		require.NoError(t, err)
		n, err := info.Codec.DecodeValue(three)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "Badger after the release")

		var counts []int64
		for _, rec := range kafkatest.ReadCommitted(t, env, out) {
			n, err := serde.Int64().Deserialize(out, rec.Value)
			require.NoError(t, err)
			counts = append(counts, n)
		}
		require.Equal(t, []int64{1, 2, 3}, counts, "the counts committed: the abort kept the frozen layers' writes")
	})
}

// A layer that does not reach Badger fails the next commit, which commits
// nothing; the task's release does not wait for it.
func TestStateLayerFailureFailsTheNextCommit(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, _ := countTopology(t, env)
		ctx := context.Background()
		boom := errors.New("disk full")
		rt := layersRuntime(t, env, topo.Graph(), kafkatest.GroupID(t), func() error { return boom })
		defer func() { require.NoError(t, rt.Close()) }()
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(t, err)
		require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
		require.NoError(t, rt.Commit(ctx, tasks.Positions{}, noOffsets{}))
		require.Eventually(t, func() bool { return rt.StateApplyFailed() != nil }, 10*time.Second, time.Millisecond)
		require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: 1, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(2)}))
		err = rt.Commit(ctx, tasks.Positions{}, noOffsets{})
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, "runtime: apply committed state")
		rt.Tasks().Release(task)
	})
}
