package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// With standby replicas, an instance keeps the stores of the tasks the
// other instance runs caught up; when that instance leaves, taking its
// tasks over replays only what the standby had not applied yet — not the
// whole changelog — and the counts stay exact.
func TestStandbyReplicasShortenTheRestore(t *testing.T) {
	kafkatest.Long(t)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		topo := wordCountTopology(t, in, out)
		vocab := make([]string, 200)
		for i := range vocab {
			vocab[i] = fmt.Sprintf("w%03d", i)
		}
		want := map[string]int64{}
		opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithStandbyReplicas(1)}
		a := startInstance(t, topo, env, appID, opts...)
		b := startInstance(t, topo, env, appID, opts...)
		time.Sleep(3 * time.Second) // both are members: each runs half the tasks
		produceLines(t, env, in, 0, 400, vocab, want)
		waitForCounts(t, env, out, want)

		var total int64
		for _, n := range want {
			total += n // changelog records written: one per count update
		}
		time.Sleep(3 * time.Second) // a few standby rounds
		// The assignor may put every stateful task on one instance; the
		// other one is then the standby that has been following them.
		standby, active := a, b
		if b.app.Stats().Restored > a.app.Stats().Restored {
			standby, active = b, a
		}
		before := standby.app.Stats().Restored
		require.NoError(t, active.stop(t), "graceful stop: the standby takes the tasks over")
		produceLines(t, env, in, 400, 100, vocab, want)
		requireExact(t, want, waitForCounts(t, env, out, want))
		restoredOnTakeover := standby.app.Stats().Restored - before
		t.Logf("changelog records: %d; applied by the standby before the takeover: %d; restored at the takeover: %d",
			total, before, restoredOnTakeover)
		require.Positive(t, before, "the standby followed the other instance's changelogs")
		require.Less(t, restoredOnTakeover, total/4, "the takeover replayed only a tail")
		require.NoError(t, standby.stop(t))
	})
}
