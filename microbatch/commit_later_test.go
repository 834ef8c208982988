package microbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/microbatch"
)

// An at-least-once AvailableNow run whose offset commits failed
// (tasks.ErrCommitLater) while it processed its input still ends once
// the commits work again: with no batch left to carry the offsets, it
// commits them by themselves. Waiting for input instead would wait for
// input that never comes: the group's members would run on and never be
// done.
func TestAvailableNowCommitsOffsetsNoBatchCarried(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		input := lines(300)
		produce(t, env, in, input)
		appID := kafkatest.GroupID(t)
		want := wantCounts(t, in, input)

		// Every offset commit fails, and the coordinator's answer is one
		// no retry cures: each batch's commit returns ErrCommitLater.
		fault := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: appID, Err: kerr.InvalidCommitOffsetSize, Count: -1})
		defer fault.Remove()
		app, err := weir.New(wordCount(t, in, out), options(env, appID, t.TempDir(),
			weir.WithGuarantee(weir.AtLeastOnce),
			weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.AvailableNow(), MaxRecordsPerBatch: 100}))...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()

		require.Eventually(t, func() bool { return len(finalTable(t, env, out)) == len(want) },
			time.Minute, 100*time.Millisecond, "the input was not processed")
		time.Sleep(500 * time.Millisecond) // the last batch's commit fails too
		fault.Remove()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the AvailableNow run did not end once its offsets could be committed")
		}
		require.Equal(t, want, finalTable(t, env, out))
	})
}
