package microbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// AvailableNow under exactly-once does not end while one of its
// repartition topics holds records past its last stable offset: they are
// the application's own, from a transaction whose markers are not written
// yet (Kafka writes them after EndTxn returns) or another member's batch
// still running. An engine that planned the repartition stage on the
// stable end right after its own commit would find nothing and end,
// leaving the last batch's repartition records for the next run (on
// Kafka, a word count a few counts short). Here a transaction of an outside
// producer stands for them, held open for a few seconds.
func TestAvailableNowWaitsForItsRepartitionTopicToSettle(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		input := lines(40)
		appID, dir := kafkatest.GroupID(t), t.TempDir()
		app := func() *weir.App { return availableNowCount(t, env, in, out, appID, dir, 0) }
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		produce(t, env, in, input)
		require.NoError(t, app().Run(ctx)) // creates the repartition topic

		// A transaction left open on the repartition topic: one more word.
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(appID+"-outside"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, err)
		defer cl.Close()
		require.NoError(t, cl.BeginTransaction())
		rec := &kgo.Record{Topic: appID + "-words-repartition", Partition: 0, Key: []byte("late"), Value: []byte("late")}
		require.NoError(t, cl.ProduceSync(ctx, rec).FirstErr())

		done := make(chan error, 1)
		go func() { done <- app().Run(ctx) }()
		select {
		case err := <-done:
			require.NoError(t, err)
			require.Fail(t, "AvailableNow ended with a transaction open on its repartition topic")
		case <-time.After(3 * time.Second):
		}
		require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
		require.NoError(t, <-done)

		want := wantCounts(t, in, input)
		want["late"] = 1
		require.Equal(t, want, finalTable(t, env, out))
	})
}
