package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// stateLog records an App's state changes.
type stateLog struct {
	mu  sync.Mutex
	seq []weir.State
}

func (l *stateLog) add(_ weir.State, to weir.Status) {
	l.mu.Lock()
	l.seq = append(l.seq, to.State)
	l.mu.Unlock()
}

func (l *stateLog) states() []weir.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]weir.State(nil), l.seq...)
}

// readyz returns /readyz's status and body.
func readyz(t *testing.T, addr string) (int, map[string]any) {
	t.Helper()
	status, body := get(t, addr, "/readyz")
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return status, m
}

// While every epoch aborts (kfake fails every EndTxn), the App is
// Retrying with the last error: /readyz is 503 and says so, /healthz stays
// 200, the rewinds are counted by cause; once the fault is gone it is
// Running again, and a stop makes it Stopped: /readyz never answers
// {"ready": true} while epochs abort.
func TestStateWhileEveryEpochAborts(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 2)
	kafkatest.CreateTopic(t, env, out, 2)
	var log stateLog
	inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t),
		weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0"), weir.WithStateListener(log.add))
	want := map[string]int64{}
	produceLines(t, env, in, 0, 20, []string{"a", "b", "c"}, want)
	waitForCounts(t, env, out, want)
	var addr string
	require.Eventually(t, func() bool {
		addr = inst.app.HTTPAddr()
		if addr == "" {
			return false
		}
		status, _ := readyz(t, addr)
		return status == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "never ready")
	require.Equal(t, weir.Running, inst.app.State().State)

	h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.UnknownProducerID, Count: -1})
	produceLines(t, env, in, 20, 20, []string{"a", "b", "c"}, want)
	require.Eventually(t, func() bool { return inst.app.State().State == weir.Retrying }, 30*time.Second, 10*time.Millisecond)
	// It stays so while the epochs keep aborting.
	for range 20 {
		status, body := readyz(t, addr)
		require.Equal(t, http.StatusServiceUnavailable, status, "%v", body)
		require.Equal(t, "retrying", body["state"], "%v", body)
		require.Contains(t, body["error"], "transaction abortable", "%v", body)
		st, _ := get(t, addr, "/healthz")
		require.Equal(t, http.StatusOK, st)
		time.Sleep(100 * time.Millisecond)
	}
	st := inst.app.State()
	require.Equal(t, weir.Retrying, st.State)
	require.ErrorContains(t, st.Err, "transaction abortable")
	_, metrics := get(t, addr, "/metrics")
	require.Positive(t, labelledValue(t, string(metrics), "weir_rewinds_total", `cause="abortable"`))
	require.Positive(t, labelledValue(t, string(metrics), "weir_aborted_epochs_total", `cause="abortable"`))
	require.Equal(t, 1.0, labelledValue(t, string(metrics), "weir_state", `state="retrying"`))

	h.Remove()
	waitForCounts(t, env, out, want)
	require.Eventually(t, func() bool {
		status, _ := readyz(t, addr)
		return status == http.StatusOK && inst.app.State().State == weir.Running
	}, 30*time.Second, 20*time.Millisecond, "never ready again")
	require.NoError(t, inst.stop(t))
	require.Equal(t, weir.Stopped, inst.app.State().State)
	seq := log.states()
	require.Equal(t, []weir.State{weir.Starting, weir.Rebalancing}, seq[:2], "%v", seq)
	require.Contains(t, seq, weir.Running)
	require.Contains(t, seq, weir.Retrying)
	require.Equal(t, weir.Stopped, seq[len(seq)-1])
}

// labelledValue returns the value of the metric's series holding label.
func labelledValue(t *testing.T, text, name, label string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			var v float64
			_, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			require.NoError(t, err, line)
			return v
		}
	}
	t.Fatalf("no series %s{%s} in:\n%s", name, label, text)
	return 0
}
