package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// An exactly-once epoch cut (CutBehind) commits behind (CommitBehind)
// while its task goes on: a record processed during the commit reads the
// epoch's pending state, a query does not until the transaction has
// committed, and the record's output, held meanwhile, is in the next
// transaction. A read_committed reader sees exact counts, each epoch's
// once it commits. On kfake and, with KAFKA_BROKERS, on Kafka.
func TestExactlyOnceCommitBehindHoldsTheNextEpoch(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, out := countTopology(t, env)
		ctx := context.Background()
		rt := layersRuntime(t, env, topo.Graph(), kafkatest.GroupID(t), nil)
		defer func() { require.NoError(t, rt.Close()) }()
		committing, gate := make(chan struct{}, 4), make(chan struct{})
		tasks.SetBeforeTxnCommit(rt, func() {
			committing <- struct{}{}
			<-gate
		})
		require.True(t, rt.CanCommitBehind())
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(t, err)
		offset := int64(0)
		process := func() {
			require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: offset, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(offset + 1)}))
			offset++
		}
		query := func() (int64, bool) { return taskstest.Count(t, rt, "counts", 0, "k") }
		counts := func() []int64 {
			var cs []int64
			for _, rec := range kafkatest.ReadCommitted(t, env, out) {
				n, err := serde.Int64().Deserialize(out, rec.Value)
				require.NoError(t, err)
				cs = append(cs, n)
			}
			return cs
		}
		commitBehind := func() chan error {
			cut, err := rt.CutBehind(ctx, tasks.Positions{}, nil, nil)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- rt.CommitBehind(ctx, cut, noOffsets{}, nil) }()
			return done
		}

		process() // k=1
		first := commitBehind()
		<-committing // epoch 1's commit holds
		process()    // k=2: on top of the pending layer, its output held
		_, ok := query()
		require.False(t, ok, "a query saw the state of a transaction not committed")
		gate <- struct{}{}
		require.NoError(t, <-first)
		// Eventually: Kafka writes a transaction's markers after EndTxn
		// returns. The second record's output, in the open transaction,
		// never shows.
		var seen []int64
		require.Eventually(t, func() bool { seen = counts(); return len(seen) > 0 }, 30*time.Second, 50*time.Millisecond)
		require.Equal(t, []int64{1}, seen, "the record processed during the commit is in the next transaction")
		n, ok := query()
		require.True(t, ok)
		require.EqualValues(t, 1, n)

		second := commitBehind()
		<-committing
		gate <- struct{}{}
		require.NoError(t, <-second)
		require.Eventually(t, func() bool { seen = counts(); return len(seen) > 1 }, 30*time.Second, 50*time.Millisecond)
		require.Equal(t, []int64{1, 2}, seen)
		n, _ = query()
		require.EqualValues(t, 2, n)
		rt.Tasks().Release(task)
	})
}

// A task released while its epoch's transaction commits behind — its
// claim ended after that epoch was cut — waits until the commit is
// decided and the layer in Badger before its stores close: a layer is
// never written after its partition was released. On kfake and, with
// KAFKA_BROKERS, on Kafka.
func TestReleaseWaitsForTheCommitBehind(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topo, in, _ := countTopology(t, env)
		ctx := context.Background()
		rt := layersRuntime(t, env, topo.Graph(), kafkatest.GroupID(t), nil)
		defer func() { require.NoError(t, rt.Close()) }()
		committing, gate := make(chan struct{}, 1), make(chan struct{})
		tasks.SetBeforeTxnCommit(rt, func() {
			committing <- struct{}{}
			<-gate
		})
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(t, err)
		require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
		cut, err := rt.CutBehind(ctx, tasks.Positions{}, nil, nil)
		require.NoError(t, err)
		committed := make(chan error, 1)
		go func() { committed <- rt.CommitBehind(ctx, cut, noOffsets{}, nil) }()
		<-committing

		released := make(chan struct{})
		go func() {
			rt.Tasks().Release(task)
			close(released)
		}()
		select {
		case <-released:
			t.Fatal("the task was released while its epoch's commit was undecided")
		case <-time.After(300 * time.Millisecond):
		}
		close(gate)
		require.NoError(t, <-committed)
		select {
		case <-released:
		case <-time.After(30 * time.Second):
			t.Fatal("the release did not end after the commit")
		}
		s, err := tasks.DBReader(rt, "counts", 0)
		require.NoError(t, err)
		defer s.Close()
		_, ok, err := s.(statestore.KeyValueStore).Get([]byte("k"))
		require.NoError(t, err)
		require.True(t, ok, "the committed layer reached Badger before the release ended")
	})
}
