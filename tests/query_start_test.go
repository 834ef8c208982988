package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// Queries that arrive while an instance starts — before its preflight has
// planned the topics, while it does, and while exactly-once is switched on
// — are answered (503 "starting", then 200 or 404) without a data race:
// the HTTP server is up before the runtime is. The instance restarts on
// the state dir of a first run, so that a query that accepts a stale copy
// (maxLag) finds one and asks for the changelog's end. Under -race this
// pins that the topic plan is published atomically; the read_committed
// switch is raced on purpose by internal/engine/tasks'
// TestQueryCopyWhileExactlyOnceIsSwitchedOn.
func TestQueriesWhileStartingDoNotRace(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 4)
				kafkatest.CreateTopic(t, env, out, 4)
				topo := wordCountTopology(t, in, out)
				appID, dir := kafkatest.GroupID(t), t.TempDir()
				opts := []weir.Option{weir.WithHTTP("127.0.0.1:0"), weir.WithGuarantee(g), weir.WithStateDir(dir)}

				want := map[string]int64{}
				produceLines(t, env, in, 0, 50, []string{"a", "b", "c"}, want)
				first := startInstance(t, topo, env, appID, opts...)
				waitForCounts(t, env, out, want)
				require.NoError(t, first.stop(t))

				inst := startInstance(t, topo, env, appID, opts...)
				defer func() { require.NoError(t, inst.stop(t)) }()
				// Ask from the first moment the server listens until the
				// store answers as a running one, alternately accepting any
				// copy (first) and owner-only.
				var addr string
				require.Eventually(t, func() bool {
					addr = inst.app.HTTPAddr()
					return addr != ""
				}, 30*time.Second, time.Millisecond, "the instance never served HTTP")
				statuses := map[int]int{}
				n := 0
				require.Eventually(t, func() bool {
					path := keyPath("counts", "a")
					if n++; n%2 == 1 {
						path += "?maxLag=1000000"
					}
					status, _ := get(t, addr, path)
					statuses[status]++
					return status == http.StatusOK && n%2 == 0
				}, 60*time.Second, time.Millisecond, "the store never answered as running")
				t.Logf("answers while starting, by status: %v", statuses)
			})
		})
	}
}
