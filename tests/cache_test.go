package tests

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/microbatch"
)

// With record caches on, the word count ends with the right count for
// every word in both modes under exactly-once, and writes fewer output
// records than one per word occurrence: updates of a word within an epoch
// or batch are coalesced. Every count a reader sees is one the word really
// had, and they only grow.
func TestWordCountCache(t *testing.T) {
	modes := map[string][]weir.Option{
		"continuous":  nil,
		"micro-batch": {weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: 300})},
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 4)
				kafkatest.CreateTopic(t, env, out, 4)
				vocab := make([]string, 30)
				for i := range vocab {
					vocab[i] = fmt.Sprintf("w%02d", i)
				}
				want := map[string]int64{}
				// The input is there before the instance starts, so each
				// epoch or batch holds many updates of every word.
				produceLines(t, env, in, 0, 600, vocab, want)
				opts := append([]weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithCacheMaxBytes(10 << 20)}, mode...)
				inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t), opts...)
				seen := waitForCounts(t, env, out, want)
				require.NoError(t, inst.stop(t))

				outputs, occurrences := requireCoalesced(t, want, seen)
				require.Less(t, outputs, occurrences/2, "the cache coalesces updates")
				t.Logf("%d outputs for %d word occurrences", outputs, occurrences)
			})
		})
	}
}

// discardBatches is a micro-batch ForEachBatch that drops every batch.
var discardBatches = func(context.Context, int64, []microbatch.Record) error { return nil }

// requireCoalesced checks a cached word count's output: every word ends
// with its count and its counts only grow (no update lost to a reader, none
// written twice); it returns the number of outputs and of occurrences.
func requireCoalesced(t *testing.T, want map[string]int64, seen map[string][]int64) (outputs, occurrences int64) {
	t.Helper()
	for w, n := range want {
		occurrences += n
		s := seen[w]
		outputs += int64(len(s))
		require.Equal(t, n, s[len(s)-1], "word %s: final count", w)
		for i := 1; i < len(s); i++ {
			require.Greater(t, s[i], s[i-1], "word %s: counts %v only grow", w, s)
		}
	}
	return outputs, occurrences
}

// An exactly-once epoch whose transaction aborts (EndTxn
// UNKNOWN_PRODUCER_ID, injected once) drops its cached updates with the
// rest of its state: after the rewind no count is written twice or lost
// and every word ends right.
func TestWordCountCacheSurvivesAnAbortedTransaction(t *testing.T) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	topo := wordCountTopology(t, in, out)
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := map[string]int64{}
	var rewinds atomic.Int64
	injected := sarama.KError(kerr.UnknownProducerID.Code)
	opts := []weir.Option{
		weir.WithGuarantee(weir.ExactlyOnce), weir.WithCacheMaxBytes(1 << 20),
		weir.WithErrorHandler(func(err error) {
			if errors.Is(err, tasks.ErrRewind) && errors.Is(err, injected) {
				rewinds.Add(1)
			}
		}),
	}
	inst := startInstance(t, topo, env, kafkatest.GroupID(t), opts...)
	defer func() { require.NoError(t, inst.stop(t)) }()

	produceLines(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)
	h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.UnknownProducerID, Count: 1})
	produceLines(t, env, in, 100, 100, vocab, want)
	require.Eventually(t, func() bool { return h.Hits() > 0 }, 30*time.Second, 20*time.Millisecond, "the fault never fired")
	h.Remove()
	produceLines(t, env, in, 200, 100, vocab, want)
	requireCoalesced(t, want, waitForCounts(t, env, out, want))
	require.Positive(t, rewinds.Load(), "the aborted transaction rewound the tasks")
}
