package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// A graceful stop that finds the member in the middle of a rebalance —
// its SyncGroup refused, the coordinator a generation ahead of its session,
// sarama waiting to join again — commits what the member processed once
// the rebalance completes, before it leaves. A stop that ended the group
// session there, at the generation the coordinator has left, would have
// every commit of the member refused (ILLEGAL_GENERATION), and the next
// owner would process its lines again on the state restored from the
// changelog — counted twice.
//
// Continuous mode; A's epochs are long, so that nothing it processed is
// committed before the stop.
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

	a := startInstance(t, topo, env, appID, weir.WithEpochInterval(time.Minute))
	produceLines(t, env, in, 0, 200, vocab, want)
	waitForCounts(t, env, out, want)

	// The first two SyncGroups of the rebalance B's join starts — A's and
	// B's — are refused: A's session stays at the generation the
	// coordinator left at the JoinGroup, and sarama waits its backoff
	// (250 ms) before it joins again. The stop comes then.
	sync := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.SyncGroup}, Group: appID,
		TopLevel: true, Err: kerr.RebalanceInProgress, Count: 2})
	b := startInstance(t, topo, env, appID)
	t.Cleanup(func() { require.NoError(t, b.stop(t)) })
	require.Eventually(t, func() bool { return sync.Hits() >= 2 }, 30*time.Second, time.Millisecond,
		"no SyncGroup was refused")
	require.NoError(t, a.stop(t))

	// B owns every partition now; more lines show whether it resumed at
	// A's last offsets or processed A's lines again.
	produceLines(t, env, in, 200, 20, vocab, want)
	requireExact(t, want, waitForCounts(t, env, out, want))
}
