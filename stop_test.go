package weir_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/third_party/kfake"
)

// A graceful stop that finds the member in the middle of a rebalance —
// its SyncGroup refused, the coordinator a generation ahead of its session
// — commits what the member processed once the rebalance completes, before
// it leaves. Before, the stop ended the group session at once, at the
// generation the coordinator had left: every commit of the member was
// refused (ILLEGAL_GENERATION), and the next owner processed its lines
// again on the state restored from the changelog — counted twice (the
// hand-over test, about 1 run in 100 on kfake).
//
// Continuous mode only: in micro-batch mode the member processes nothing
// while the rebalance cannot complete (its batches wait for their
// commits), so the stop finds nothing uncommitted.
func TestStopDuringARebalanceCommits(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		testStopDuringARebalance(t, env)
	})
}

func testStopDuringARebalance(t *testing.T, env *kafkatest.Env) {
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := map[string]int64{}

	a := startInstance(t, topo, env, appID)
	produceLines(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)

	// Every SyncGroup of the group is refused: the rebalance B's join
	// starts never completes, and A's session stays at the generation
	// the coordinator leaves at its first JoinGroup.
	sync := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.SyncGroup}, Group: appID,
		TopLevel: true, Err: kerr.RebalanceInProgress, Count: -1})
	b := startInstance(t, topo, env, appID)
	t.Cleanup(func() { require.NoError(t, b.stop(t)) })
	require.Eventually(t, func() bool { return sync.Hits() >= 2 }, 30*time.Second, 10*time.Millisecond,
		"no SyncGroup was refused")
	produceLines(t, env, in, 100, 100, vocab, want)
	waitForCounts(t, env, out, want) // A processed them; its commits are refused

	a.cancel()
	time.Sleep(500 * time.Millisecond) // the stop reached the group
	sync.Remove()
	select {
	case err := <-a.done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("instance A did not stop")
	}

	// B owns every partition now; one more line per word shows whether
	// it resumed at A's last offsets or processed A's lines again.
	produceLines(t, env, in, 200, 20, vocab, want)
	requireExact(t, want, waitForCounts(t, env, out, want))
}
