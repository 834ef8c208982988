package tasks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// An exactly-once commit whose offsets were all committed already, with
// no record sent since, begins no transaction. Each claim that ends
// commits under the barrier with the positions of the claims still
// running. After the first, those are offsets the last transaction
// committed. Committing them again, in a transaction of offsets alone,
// would cost time: right after the previous EndTxn, Kafka refuses its
// AddOffsetsToTxn (CONCURRENT_TRANSACTIONS) until the markers are
// written, so on Kafka 4.4 a graceful stop of 8 claims would spend 100 ms
// (sarama's retry backoff) on each of the 7 after the first. On kfake and,
// with KAFKA_BROKERS, on Kafka.
func TestExactlyOnceSkipsOffsetsAlreadyCommitted(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		rt, in, s, commits := txnCommits(t, env)
		other := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, other, 1)
		ctx := context.Background()
		group := s.group
		a := offsets.TopicPartition{Topic: in, Partition: 0}
		b := offsets.TopicPartition{Topic: other, Partition: 0}

		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{a: 3, b: 5}, s, nil))
		require.Equal(t, 1, *commits)
		// The claim of a ended: b's offset was committed with it.
		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{b: 5}, s, nil))
		require.Equal(t, 1, *commits, "a commit of offsets already committed began a transaction")
		// b moved: committed.
		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{b: 6}, s, nil))
		require.Equal(t, 2, *commits)

		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		got, err := admin.CommittedOffsets(ctx, group, in, []int32{0})
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 3}, got)
		got, err = admin.CommittedOffsets(ctx, group, other, []int32{0})
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 6}, got)
	})
}

// txnCommits returns an exactly-once runtime of countTopology, closed when
// the test ends, with its input topic, a simpleGroup to commit in and the
// number of transactions it has committed so far.
func txnCommits(t *testing.T, env *kafkatest.Env) (rt *tasks.Runtime, in string, s simpleGroup, commits *int) {
	topo, in, _ := countTopology(t, env)
	s = simpleGroup{group: kafkatest.GroupID(t)}
	rt = layersRuntime(t, env, topo.Graph(), s.group, nil)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	commits = new(int)
	tasks.SetBeforeTxnCommit(rt, func() { *commits++ })
	return rt, in, s, commits
}

// simpleGroup is noOffsets with a group: its transactional offsets are
// committed as a standalone consumer's (generation -1, no member id),
// which Kafka accepts without a member.
type simpleGroup struct {
	noOffsets
	group string
}

func (s simpleGroup) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: s.group, GenerationID: -1}
}

// A Commit under the barrier after a commit behind whose held record
// failed when sent — the open transaction doomed, as a claim ending
// before the next epoch end finds it — rewinds without committing and
// ends the doomed transaction; the commit after it commits. On kfake and,
// with KAFKA_BROKERS, on Kafka.
func TestExactlyOnceCommitAfterADoomedReleaseRewinds(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		rt, in, s, commits := txnCommits(t, env)
		ctx := context.Background()
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(t, err)
		defer rt.Tasks().Release(task)
		a := offsets.TopicPartition{Topic: in, Partition: 0}

		boom := fmt.Errorf("%w: held output refused", txn.ErrAbortable)
		tasks.DoomHeld(rt, boom)
		require.ErrorIs(t, rt.CommitTimed(ctx, tasks.Positions{a: 1}, s, nil), tasks.ErrRewind)
		require.Zero(t, *commits, "a doomed transaction committed")

		require.NoError(t, task.Process(ctx, kafka.Record{Topic: in, Partition: 0, Offset: 0, Key: []byte("k"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{a: 1}, s, nil))
		require.Equal(t, 1, *commits)
		n, ok := taskstest.Count(t, rt, "counts", 0, "k")
		require.True(t, ok)
		require.EqualValues(t, 1, n)
	})
}
