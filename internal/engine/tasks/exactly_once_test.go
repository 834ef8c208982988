package tasks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/offsets"
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
		topo, in, _ := countTopology(t, env)
		other := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, other, 1)
		ctx := context.Background()
		group := kafkatest.GroupID(t)
		rt := layersRuntime(t, env, topo.Graph(), group, nil)
		defer func() { require.NoError(t, rt.Close()) }()
		commits := 0
		tasks.SetBeforeTxnCommit(rt, func() { commits++ })
		s := simpleGroup{group: group}
		a := offsets.TopicPartition{Topic: in, Partition: 0}
		b := offsets.TopicPartition{Topic: other, Partition: 0}

		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{a: 3, b: 5}, s, nil))
		require.Equal(t, 1, commits)
		// The claim of a ended: b's offset was committed with it.
		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{b: 5}, s, nil))
		require.Equal(t, 1, commits, "a commit of offsets already committed began a transaction")
		// b moved: committed.
		require.NoError(t, rt.CommitTimed(ctx, tasks.Positions{b: 6}, s, nil))
		require.Equal(t, 2, commits)

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
