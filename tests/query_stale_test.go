package tests

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	iquery "github.com/weirstream/weir/internal/query"
)

// staleReply is a key lookup's reply with the copy that served it.
type staleReply struct {
	reply
	Role string `json:"role"`
	Lag  int64  `json:"lag"`
}

// A query with ?maxLag= is answered by the asked instance's own standby
// copy when it lags at most that many changelog records — with its role
// and lag in the reply — and the value is a committed one; without maxLag
// only the owner answers. A malformed maxLag is a 400. Every reply is
// counted in weir_query_requests_total.
func TestQueryMaxLagServesStandbys(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		topo := keyCountTopology(t, in, out)
		opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0"), weir.WithStandbyReplicas(1)}
		a := startInstance(t, topo, env, appID, opts...)
		b := startInstance(t, topo, env, appID, opts...)
		defer func() {
			require.NoError(t, a.stop(t))
			require.NoError(t, b.stop(t))
		}()
		addrs := httpAddrs(t, a, b)
		vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		want := map[string]int64{}
		produceWords(t, env, in, 0, 200, vocab, want)
		waitForCounts(t, env, out, want)
		require.Eventually(t, func() bool { return answersEverywhere(t, addrs, want) }, 60*time.Second, 200*time.Millisecond)

		// Every key from the first instance, within 0 records: its own
		// copies answer once the standbys caught up (every second). The
		// group may still be settling: the second instance can join after
		// the first has counted every word, so wait until some keys live
		// on it and the first instance's standby copies answer them.
		roles := map[string]int{}
		require.Eventually(t, func() bool {
			clear(roles)
			for w, n := range want {
				var r staleReply
				status, body := get(t, addrs[0], keyPath("counts", w)+"?maxLag=0")
				require.NoError(t, json.Unmarshal(body, &r), string(body))
				if status != http.StatusOK || r.ServedBy != addrs[0] {
					return false
				}
				require.Equal(t, n, *r.Value, "%s (%s copy)", w, r.Role)
				require.Zero(t, r.Lag, w)
				roles[r.Role]++
			}
			return roles["standby"] > 0
		}, 60*time.Second, 200*time.Millisecond, "the first instance answers every key from its own copies, some from standbys of the other's")

		// Without maxLag the owner answers. The standby answers above do
		// not wait for the owner: a partition that just moved to the
		// second instance may still be restoring there, and the owner then
		// turns queries away with a 503 (cause "restoring") until it
		// runs. Any other refusal fails.
		require.Eventually(t, func() bool {
			for w, n := range want {
				var r staleReply
				status, body := get(t, addrs[0], keyPath("counts", w))
				require.NoError(t, json.Unmarshal(body, &r), string(body))
				if status == http.StatusServiceUnavailable && r.Cause == iquery.CauseRestoring {
					return false
				}
				require.Equal(t, http.StatusOK, status, string(body))
				require.Equal(t, "active", r.Role, w)
				require.Equal(t, n, *r.Value, w)
			}
			return true
		}, 60*time.Second, 200*time.Millisecond, "the owner answers every key once it runs")
		r := query(t, addrs[1], keyPath("counts", "a")+"?maxLag=soon")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.Error, "maxLag")

		_, body := get(t, addrs[0], "/metrics")
		require.Contains(t, string(body), `weir_query_requests_total{`)
		require.Contains(t, string(body), `result="answered"`)
		require.Contains(t, string(body), `cause="standby"`)
	})
}
