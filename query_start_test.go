package weir_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// Queries that arrive while an instance starts — before its preflight has
// planned the topics, and while it does — are answered (503 "starting",
// then 200 or 404) without a data race on the topic plan: the HTTP server
// is up before the plan exists. Under -race this failed before the plan
// was published atomically (CI run of 2026-12-01,
// TestQueryAvailabilityUnderChurn).
func TestQueriesWhileStartingDoNotRace(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		topo := wordCountTopology(t, in, out)
		inst := startInstance(t, topo, env, kafkatest.GroupID(t), weir.WithHTTP("127.0.0.1:0"))
		defer func() { require.NoError(t, inst.stop(t)) }()

		// Ask from the first moment the server listens until the store
		// answers as a running one: 404 for a key nobody counted.
		var addr string
		require.Eventually(t, func() bool {
			addr = inst.app.HTTPAddr()
			return addr != ""
		}, 30*time.Second, time.Millisecond, "the instance never served HTTP")
		statuses := map[int]int{}
		require.Eventually(t, func() bool {
			status, _ := get(t, addr, keyPath("counts", "never-counted"))
			statuses[status]++
			return status == http.StatusNotFound
		}, 60*time.Second, time.Millisecond, "the store never answered as running")
		t.Logf("answers while starting, by status: %v", statuses)
	})
}
