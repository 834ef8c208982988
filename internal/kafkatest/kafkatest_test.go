package kafkatest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

func TestNames(t *testing.T) {
	a, b := kafkatest.Topic(t), kafkatest.Topic(t)
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "weir-TestNames-"), a)
	require.True(t, strings.HasPrefix(kafkatest.GroupID(t), "weir-group-TestNames-"))
	t.Run("odd / name with spaces", func(t *testing.T) {
		require.Regexp(t, `^[a-zA-Z0-9._-]+$`, kafkatest.Topic(t))
	})
}

func TestRealBrokers(t *testing.T) {
	t.Setenv(kafkatest.EnvBrokers, " a:1, ,b:2 ")
	require.Equal(t, []string{"a:1", "b:2"}, kafkatest.RealBrokers())
	t.Setenv(kafkatest.EnvBrokers, "")
	require.Nil(t, kafkatest.RealBrokers())
}

func TestRunGivesKfakeAndCluster(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		require.NotEmpty(t, env.Brokers)
		if env.IsKfake() {
			require.Equal(t, "kfake", env.Name)
			require.NotNil(t, env.Cluster())
		} else {
			require.Equal(t, "kafka", env.Name)
			require.Nil(t, env.Cluster())
		}
	})
}

// TestReadCommittedSkipsAbortedAndMarkers writes committed and aborted
// transactions, ending the log with an abort marker, and checks that the
// verifier sees exactly the committed records and terminates.
func TestReadCommittedSkipsAbortedAndMarkers(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("plain")})

		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(kafkatest.Topic(t)),
			kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		defer cl.Close()
		txn := func(commit bool, values ...string) {
			require.NoError(t, cl.BeginTransaction())
			for i, v := range values {
				r := &kgo.Record{Partition: int32(i % 2), Value: []byte(v)}
				require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
			}
			require.NoError(t, cl.EndTransaction(t.Context(), kgo.TransactionEndTry(commit)))
		}
		txn(true, "c1", "c2", "c3")
		txn(false, "a1", "a2")
		txn(true, "c4")
		txn(false, "a3", "a4") // the log of both partitions ends with an abort marker

		var got []string
		for _, r := range kafkatest.ReadCommitted(t, env, topic) {
			got = append(got, fmt.Sprintf("%d:%s", r.Partition, r.Value))
		}
		require.Equal(t, []string{"0:plain", "0:c1", "0:c3", "0:c4", "1:c2"}, got)
	})
}

// TestReadCommittedSeesACommitThatReturned reads right after each
// EndTxn returns. Kafka writes a transaction's markers after EndTxn
// returns, so the last stable offset may still be below the commit's
// records for a moment; a test reading an application's output as soon
// as it stopped read a word count one update short.
func TestReadCommittedSeesACommitThatReturned(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 3)
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(kafkatest.Topic(t)),
			kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		defer cl.Close()
		for i := range 100 {
			require.NoError(t, cl.BeginTransaction())
			for p := range int32(3) {
				r := &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d", i)}
				require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
			}
			require.NoError(t, cl.EndTransaction(t.Context(), kgo.TryCommit))
			require.Len(t, kafkatest.ReadCommitted(t, env, topic), 3*(i+1), "read after commit %d", i)
		}
	})
}
