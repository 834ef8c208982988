package microbatch_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A batch processes the ranges of different tasks side by side: a record
// of partition 0 that cannot finish before a record of partition 1 has
// been processed does not hold partition 1's range behind it: the ranges
// of one batch do not run one after the other, in plan order, on one
// goroutine.
func TestBatchRunsTasksSideBySide(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		kafkatest.Produce(t, env,
			kafka.Record{Topic: in, Partition: 0, Key: []byte("a"), Value: []byte("wait")},
			kafka.Record{Topic: in, Partition: 1, Key: []byte("b"), Value: []byte("go")})

		var once sync.Once
		went := make(chan struct{})
		waited := make(chan bool, 1)
		b := topology.NewBuilder()
		topology.MapValues(topology.NewStream(b, in, serde.String(), serde.String()), func(v string) string {
			switch v {
			case "go":
				once.Do(func() { close(went) })
			case "wait":
				select {
				case <-went:
					waited <- true
				case <-time.After(10 * time.Second):
					waited <- false
				}
			}
			return v
		}).To(out)
		topo, err := b.Build()
		require.NoError(t, err)

		cfg := microbatch.Config{Trigger: microbatch.AvailableNow()}
		require.NoError(t, runBounded(t, topo, options(env, kafkatest.GroupID(t), t.TempDir(), weir.WithMicroBatch(cfg))))
		require.True(t, <-waited, "partition 1's record was processed while partition 0's waited for it")
		require.Len(t, kafkatest.ReadCommitted(t, env, out), 2)
	})
}
