package tests

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Continuous at-least-once epochs of a stateless topology commit behind
// (the claims go on while the outputs are flushed and the offsets
// committed). A graceful hand-over still loses nothing and repeats
// nothing: a claim that ends commits everything it processed before its
// partition goes, after the commits still running behind; and at the end
// the group's committed offsets are the input's end.
func TestContinuousStatelessHandOverCommitsBehind(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 8)
		kafkatest.CreateTopic(t, env, out, 8)
		appID := kafkatest.GroupID(t)
		b := topology.NewBuilder()
		s := topology.NewStream(b, in, serde.Bytes(), serde.Bytes())
		topology.MapValues(s.Filter(func(_, v []byte) bool { return len(v) > 0 }), bytes.ToUpper).To(out)
		topo, err := b.Build()
		require.NoError(t, err)

		instances := []*instance{startInstance(t, topo, env, appID), startInstance(t, topo, env, appID), startInstance(t, topo, env, appID)}
		var stopOnce sync.Once
		stopRest := func() {
			stopOnce.Do(func() {
				for _, inst := range instances[1:] {
					require.NoError(t, inst.stop(t))
				}
			})
		}
		t.Cleanup(stopRest)
		produce := func(first, n int) {
			recs := make([]kafka.Record, n)
			for i := range recs {
				recs[i] = kafka.Record{Topic: in, Partition: kafka.PartitionByKey, Key: []byte(fmt.Sprint(first + i)),
					Value: []byte(fmt.Sprintf("v%d", first+i)), Timestamp: time.UnixMilli(int64(1_000_000 + first + i))}
			}
			kafkatest.Produce(t, env, recs...)
		}
		waitFor := func(n int) map[string]int {
			var seen map[string]int
			require.True(t, assert.Eventually(t, func() bool {
				seen = map[string]int{}
				for _, r := range kafkatest.ReadCommitted(t, env, out) {
					seen[string(r.Key)]++
				}
				return len(seen) == n
			}, 90*time.Second, 250*time.Millisecond), "outputs of %d keys never appeared (saw %d)", n, len(seen))
			return seen
		}
		produce(0, 400)
		waitFor(400)
		require.NoError(t, instances[0].stop(t), "graceful stop")
		produce(400, 400)
		waitFor(800)
		stopRest()

		seen := waitFor(800)
		for k, n := range seen {
			require.Equal(t, 1, n, "key %s: one output, no repeat after a graceful hand-over", k)
			require.NotEmpty(t, k)
		}
		ends, err := kafkatest.EndOffsets(t.Context(), env.Brokers, in, false)
		require.NoError(t, err)
		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		committed, err := admin.CommittedOffsets(t.Context(), appID, in, nil)
		require.NoError(t, err)
		for p, end := range ends {
			require.Equal(t, end, committed[p], "partition %d: committed offset", p)
		}
	})
}
