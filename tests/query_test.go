package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// reply is what the query endpoints answer, errors included.
type reply struct {
	status    int
	Value     *int64 `json:"value"`
	Partition int32  `json:"partition"`
	ServedBy  string `json:"servedBy"`
	Error     string `json:"error"`
	Cause     string `json:"cause"`
	Owner     *struct {
		Member string `json:"member"`
		Addr   string `json:"addr"`
	} `json:"owner"`
	Entries []struct {
		Key   string `json:"key"`
		Value int64  `json:"value"`
	} `json:"entries"`
}

var httpClient = &http.Client{Timeout: 15 * time.Second}

// get fetches path from the instance at addr.
func get(t *testing.T, addr, path string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get("http://" + addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func query(t *testing.T, addr, path string) reply {
	t.Helper()
	status, body := get(t, addr, path)
	var r reply
	require.NoError(t, json.Unmarshal(body, &r), "reply to %s: %s", path, body)
	r.status = status
	return r
}

// queryAgain queries until the reply is not a 503 — which says "try
// again": a partition between owners during a rebalance, or restoring.
func queryAgain(t *testing.T, addr, path string) reply {
	t.Helper()
	var r reply
	require.Eventually(t, func() bool {
		r = query(t, addr, path)
		return r.status != http.StatusServiceUnavailable
	}, 30*time.Second, 50*time.Millisecond, "%s on %s stays unavailable", path, addr)
	return r
}

func keyPath(store, key string) string {
	return "/stores/" + url.PathEscape(store) + "/keys/" + url.PathEscape(key)
}

// httpAddrs waits until every instance serves HTTP and returns the
// addresses.
func httpAddrs(t *testing.T, insts ...*instance) []string {
	t.Helper()
	addrs := make([]string, len(insts))
	require.Eventually(t, func() bool {
		for i, in := range insts {
			addrs[i] = in.app.HTTPAddr()
			if addrs[i] == "" {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "an instance never served HTTP")
	return addrs
}

// answersEverywhere reports whether every instance answers every word with
// its wanted count.
func answersEverywhere(t *testing.T, addrs []string, want map[string]int64) bool {
	for _, addr := range addrs {
		for w, n := range want {
			r := query(t, addr, keyPath("counts", w))
			if r.status != http.StatusOK || r.Value == nil || *r.Value != n {
				return false
			}
		}
	}
	return true
}

// Three instances count words; every key asked of every instance gets the
// same answer, the count a read_committed reader of the output computes —
// from the instance that runs the key's partition, forwarded when that is
// another. Unknown stores and keys are 404, malformed requests 400.
func TestQueriesAnswerTheSameOnEveryInstance(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 6)
		kafkatest.CreateTopic(t, env, out, 6)
		appID := kafkatest.GroupID(t)
		topo := wordCountTopology(t, in, out)
		opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0")}
		insts := []*instance{
			startInstance(t, topo, env, appID, opts...),
			startInstance(t, topo, env, appID, opts...),
			startInstance(t, topo, env, appID, opts...),
		}
		defer func() {
			for _, in := range insts {
				require.NoError(t, in.stop(t))
			}
		}()
		addrs := httpAddrs(t, insts...)
		vocab := []string{"apple", "kiwi", "fig", "plum", "pear", "lime", "date", "sloe", "yuzu", "nut"}
		want := map[string]int64{}
		produceLines(t, env, in, 0, 300, vocab, want)
		seen := waitForCounts(t, env, out, want)
		committed := map[string]int64{}
		for w, s := range seen {
			committed[w] = s[len(s)-1]
		}
		require.Equal(t, want, committed, "the read_committed output is the recomputation")

		require.Eventually(t, func() bool { return answersEverywhere(t, addrs, want) }, 60*time.Second, 200*time.Millisecond,
			"every instance answers every key with its count")
		// One more round, counting forwards; a rebalance may still be moving
		// partitions (503: try again).
		forwarded := 0
		for _, addr := range addrs {
			for w, n := range want {
				r := queryAgain(t, addr, keyPath("counts", w))
				require.Equal(t, http.StatusOK, r.status, "%s on %s: %s", w, addr, r.Error)
				require.Equal(t, n, *r.Value, "%s on %s", w, addr)
				if r.ServedBy != addr {
					forwarded++
				}
			}
		}
		require.Positive(t, forwarded, "some keys live on other instances")

		// Range over every partition, from any instance.
		for _, addr := range addrs {
			r := queryAgain(t, addr, "/stores/counts/keys")
			require.Equal(t, http.StatusOK, r.status, r.Error)
			got := map[string]int64{}
			for _, e := range r.Entries {
				got[e.Key] = e.Value
			}
			require.Equal(t, want, got)
		}
		r := queryAgain(t, addrs[0], "/stores/counts/keys?from=f&to=m")
		require.Equal(t, http.StatusOK, r.status, r.Error)
		var keys []string
		for _, e := range r.Entries {
			keys = append(keys, e.Key)
		}
		require.ElementsMatch(t, []string{"fig", "kiwi", "lime"}, keys)

		// Errors.
		r = queryAgain(t, addrs[1], keyPath("nope", "apple"))
		require.Equal(t, http.StatusNotFound, r.status)
		require.Contains(t, r.Error, `"nope"`)
		for _, addr := range addrs {
			r = queryAgain(t, addr, keyPath("counts", "durian"))
			require.Equal(t, http.StatusNotFound, r.status, "unknown key on %s", addr)
			require.Contains(t, r.Error, "durian")
		}
		for _, path := range []string{"/stores/counts/keys?limit=zero", "/stores/counts/partitions/99/keys", "/stores/counts/keys/apple?from=yesterday"} {
			r = queryAgain(t, addrs[2], path)
			require.Equal(t, http.StatusBadRequest, r.status, path)
			require.NotEmpty(t, r.Error, path)
		}

		// Health, readiness, metrics, progress.
		for _, addr := range addrs {
			status, _ := get(t, addr, "/healthz")
			require.Equal(t, http.StatusOK, status)
			require.Eventually(t, func() bool {
				status, _ := get(t, addr, "/readyz")
				return status == http.StatusOK
			}, 30*time.Second, 50*time.Millisecond, "%s never ready", addr)
		}
		var total float64
		for _, addr := range addrs {
			status, body := get(t, addr, "/metrics")
			require.Equal(t, http.StatusOK, status)
			text := string(body)
			for _, name := range []string{"weir_records_out_total", "weir_commit_duration_seconds_bucket", "weir_rebalances_total", "weir_restoring_tasks", "weir_dead_lettered_total", "weir_restored_records_total"} {
				require.Contains(t, text, name)
			}
			total += metricValue(t, text, "weir_records_in_total")
		}
		require.GreaterOrEqual(t, total, float64(300), "the instances read every input line (and the repartitioned words)")
		var reports []map[string]any
		for _, addr := range addrs {
			status, body := get(t, addr, "/progress")
			require.Equal(t, http.StatusOK, status)
			var rs []map[string]any
			require.NoError(t, json.Unmarshal(body, &rs))
			reports = append(reports, rs...)
		}
		require.NotEmpty(t, reports)
		require.Contains(t, reports[len(reports)-1], "Epoch")
	})
}

// keyCountTopology counts input records by key: one sub-topology, so every
// task counts.
func keyCountTopology(t *testing.T, in, out string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	topology.NewStream(b, in, serde.String(), serde.String()).GroupByKey().
		Count(topology.Materialized("counts")).ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// produceWords writes n records keyed by words of vocab.
func produceWords(t *testing.T, env *kafkatest.Env, topic string, first, n int, vocab []string, want map[string]int64) {
	t.Helper()
	var recs []kafka.Record
	for i := first; i < first+n; i++ {
		w := vocab[(i*7)%len(vocab)]
		want[w]++
		recs = append(recs, kafka.Record{Topic: topic, Partition: kafka.PartitionByKey, Key: []byte(w), Value: []byte("x"), Timestamp: time.UnixMilli(int64(1000 + i))})
	}
	kafkatest.Produce(t, env, recs...)
}

// metricValue sums the samples of a metric in the text exposition format.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	var sum float64
	found := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		_, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
		require.NoError(t, err, line)
		sum += v
		found = true
	}
	require.True(t, found, "metric %s", name)
	return sum
}

// An owner that cannot be reached gets a 503 that names it. One of two
// instances advertises an address nobody listens on.
func TestQueryOwnerUnreachable(t *testing.T) {
	kafkatest.Long(t)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		topo := keyCountTopology(t, in, out)
		good := startInstance(t, topo, env, appID, weir.WithHTTP("127.0.0.1:0"))
		dead := startInstance(t, topo, env, appID, weir.WithHTTP("127.0.0.1:0"), weir.WithAdvertisedHTTP("127.0.0.1:1"))
		defer func() {
			require.NoError(t, good.stop(t))
			require.NoError(t, dead.stop(t))
		}()
		addrs := httpAddrs(t, good)
		vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		want := map[string]int64{}
		produceWords(t, env, in, 0, 100, vocab, want)
		waitForCounts(t, env, out, want)
		// Once both run partitions, the keys the good instance counts
		// answer, and the others name the dead owner.
		var last []string
		require.Eventually(t, func() bool {
			ok, unreachable := 0, 0
			last = last[:0]
			for w, n := range want {
				r := query(t, addrs[0], keyPath("counts", w))
				last = append(last, fmt.Sprintf("%s: %d %s", w, r.status, r.Error))
				switch {
				case r.status == http.StatusOK && *r.Value == n:
					ok++
				case r.status == http.StatusServiceUnavailable && r.Owner != nil && r.Owner.Addr == "127.0.0.1:1":
					require.Contains(t, r.Error, "127.0.0.1:1")
					require.Contains(t, r.Error, "unreachable")
					unreachable++
				}
			}
			return ok > 0 && unreachable > 0 && ok+unreachable == len(want)
		}, 60*time.Second, 200*time.Millisecond, "keys of the dead owner get 503 naming it; last round: %q", &last)
	})
}

// While every transaction commit fails (aborted, the tasks rewound), the
// instances keep answering queries — and never with a count of an aborted
// epoch: every reply equals what a read_committed reader saw committed
// before the failures began. Once commits succeed again, queries catch up.
func TestQueriesNeverShowAbortedValues(t *testing.T) {
	kafkatest.Long(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	env.RequireKfake(t)
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := kafkatest.GroupID(t)
	// Counting the input directly, so each epoch's staged counts belong to
	// the transaction that fails (behind a repartition topic they would
	// wait, read_committed, for a commit that never comes).
	topo := keyCountTopology(t, in, out)
	opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0"), weir.WithErrorHandler(func(error) {})}
	a := startInstance(t, topo, env, appID, opts...)
	b := startInstance(t, topo, env, appID, opts...)
	defer func() {
		require.NoError(t, a.stop(t))
		require.NoError(t, b.stop(t))
	}()
	addrs := httpAddrs(t, a, b)
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := map[string]int64{}
	produceWords(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)
	require.Len(t, want, len(vocab))
	require.Eventually(t, func() bool { return answersEverywhere(t, addrs, want) }, 60*time.Second, 200*time.Millisecond)
	committed := map[string]int64{}
	for w, n := range want {
		committed[w] = n
	}

	// Every commit fails from now on; aborts go through.
	h := env.Cluster().Fault(kfake.Fault{
		Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.UnknownProducerID, Count: -1,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit },
	})
	readBefore := a.app.Stats().RecordsIn + b.app.Stats().RecordsIn
	produceWords(t, env, in, 100, 100, vocab, want)
	// Query until many commits failed after the new lines were processed
	// (and rewound, and processed again): a count staged by any of those
	// epochs would show.
	answered := 0
	for h.Hits() < 20 || answered < 200 || a.app.Stats().RecordsIn+b.app.Stats().RecordsIn < readBefore+200 {
		for _, addr := range addrs {
			for w := range committed {
				r := query(t, addr, keyPath("counts", w))
				switch r.status {
				case http.StatusOK:
					require.Equal(t, committed[w], *r.Value, "%s on %s (served by %s) shows an uncommitted count", w, addr, r.ServedBy)
					answered++
				case http.StatusServiceUnavailable: // rewinding: the task restores
				default:
					t.Fatalf("%s on %s: %d %s", w, addr, r.status, r.Error)
				}
			}
		}
	}
	require.Positive(t, answered, "queries were answered while commits failed")
	require.Equal(t, committed, finalCounts(t, env, out), "nothing committed while the fault was on")
	h.Remove()

	seen := waitForCounts(t, env, out, want)
	requireExact(t, want, seen)
	require.Eventually(t, func() bool { return answersEverywhere(t, addrs, want) }, 60*time.Second, 200*time.Millisecond,
		"queries show the counts committed after the fault")
}

// finalCounts is the last count of every word in the output.
func finalCounts(t *testing.T, env *kafkatest.Env, topic string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for w, s := range countsSeen(t, env, topic) {
		out[w] = s[len(s)-1]
	}
	return out
}

// Micro-batch mode serves the same queries: state committed batch by
// batch, forwarded to the owner, and /progress holds the batch reports.
func TestQueriesInMicroBatchMode(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		topo := wordCountTopology(t, in, out)
		opts := []weir.Option{weir.WithMode(weir.MicroBatch), weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0")}
		insts := []*instance{startInstance(t, topo, env, appID, opts...), startInstance(t, topo, env, appID, opts...)}
		defer func() {
			for _, in := range insts {
				require.NoError(t, in.stop(t))
			}
		}()
		addrs := httpAddrs(t, insts...)
		want := map[string]int64{}
		produceLines(t, env, in, 0, 200, []string{"apple", "kiwi", "fig", "plum", "pear", "lime"}, want)
		waitForCounts(t, env, out, want)
		require.Eventually(t, func() bool { return answersEverywhere(t, addrs, want) }, 60*time.Second, 200*time.Millisecond,
			"every instance answers every key with its count")
		var batches int
		for _, addr := range addrs {
			status, body := get(t, addr, "/progress")
			require.Equal(t, http.StatusOK, status)
			var rs []map[string]any
			require.NoError(t, json.Unmarshal(body, &rs))
			for _, r := range rs {
				if _, ok := r["BatchID"]; ok {
					batches++
				}
			}
		}
		require.Positive(t, batches, "/progress holds micro-batch reports")
	})
}
