package weir_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
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

				var occurrences, outputs int64
				for w, n := range want {
					occurrences += n
					s := seen[w]
					outputs += int64(len(s))
					require.Equal(t, n, s[len(s)-1], "word %s: final count", w)
					for i := 1; i < len(s); i++ {
						require.Greater(t, s[i], s[i-1], "word %s: counts %v only grow", w, s)
					}
				}
				require.Less(t, outputs, occurrences/2, "the cache coalesces updates")
				t.Logf("%d outputs for %d word occurrences", outputs, occurrences)
			})
		})
	}
}

// discardBatches is a micro-batch ForEachBatch that drops every batch.
var discardBatches = func(context.Context, int64, []microbatch.Record) error { return nil }
